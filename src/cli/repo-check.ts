import { existsSync } from 'node:fs';
import { Git } from '../workspace/git.js';
import { UsageError } from './errors.js';

/** Fails early, with a clear message, when --repo is not a git repository we can read. */
export async function checkRepoReachable(repo: string): Promise<void> {
  const isPath = repo.startsWith('/');
  if (isPath && !existsSync(repo)) throw new UsageError(`--repo ${repo}: no such directory`);
  const heads = await new Git().tryRun(isPath ? repo : process.cwd(), ['ls-remote', '--heads', repo]);
  if (heads === undefined) throw new UsageError(`--repo ${repo}: not a git repository (or not reachable)`);
  if (heads.trim() === '') throw new UsageError(`--repo ${repo}: the repository has no branches yet; commit something first`);
}
