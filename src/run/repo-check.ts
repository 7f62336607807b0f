import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError, UsageError } from '../common/errors.js';
import { Git, type GitOptions } from '../workspace/git.js';
import { refuseOwnWorkspaces } from './local-repo.js';

/**
 * Fails early, with a clear message, when --repo is not a git repository we can read, or has no
 * branch `base` (else the clone would fail later as an internal error). `auth`: the remote's credentials.
 * `ls-remote` runs from an empty folder of its own, the path given as its argument: run inside
 * the path, git would read that folder's config (a planted one may name programs to run).
 */
export async function checkRepoReachable(repo: string, base?: string, auth: Pick<GitOptions, 'remoteConfig'> = {}, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const isPath = repo.startsWith('/');
  refuseOwnWorkspaces(repo, env);
  if (isPath && !existsSync(repo)) throw new UsageError(`--repo ${repo}: no such directory`);
  const neutral = await mkdtemp(join(tmpdir(), 'goal-loop-ls-remote-'));
  let heads: string | undefined;
  try {
    heads = await new Git(auth).tryRun(neutral, ['ls-remote', '--heads', repo]);
  } finally {
    await rm(neutral, { recursive: true, force: true });
  }
  if (heads === undefined) throw new UsageError(`--repo ${repo}: not a git repository (or not reachable)`);
  if (heads.trim() === '') throw new UsageError(`--repo ${repo}: the repository has no branches yet; commit something first`);
  if (base !== undefined && !heads.split('\n').some((line) => line.split('\t')[1] === `refs/heads/${base}`)) {
    throw new InputError(`--base: no branch "${base}" on ${repo}`);
  }
}
