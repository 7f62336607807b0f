import { existsSync } from 'node:fs';
import { Git, type GitOptions } from '../workspace/git.js';
import { InputError, UsageError } from '../common/errors.js';

/**
 * Fails early, with a clear message, when --repo is not a git repository we can read, or has no
 * branch `base` (else the clone would fail later as an internal error). `auth`: the remote's credentials.
 */
export async function checkRepoReachable(repo: string, base?: string, auth: Pick<GitOptions, 'remoteConfig'> = {}): Promise<void> {
  const isPath = repo.startsWith('/');
  if (isPath && !existsSync(repo)) throw new UsageError(`--repo ${repo}: no such directory`);
  const heads = await new Git(auth).tryRun(isPath ? repo : process.cwd(), ['ls-remote', '--heads', repo]);
  if (heads === undefined) throw new UsageError(`--repo ${repo}: not a git repository (or not reachable)`);
  if (heads.trim() === '') throw new UsageError(`--repo ${repo}: the repository has no branches yet; commit something first`);
  if (base !== undefined && !heads.split('\n').some((line) => line.split('\t')[1] === `refs/heads/${base}`)) {
    throw new InputError(`--base: no branch "${base}" on ${repo}`);
  }
}
