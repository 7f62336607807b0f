import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { createSampleRepo, type SampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { MirrorCache, type MirrorCacheOptions } from '../../src/workspace/mirror-cache.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

/** A sample remote, a mirror cache under a workspace root, and a maker of goal workspaces. */
export async function mirrorSetup(cacheOpts: Partial<MirrorCacheOptions> = {}, files?: Record<string, string>) {
  const root = await tempDir('goal-loop-mirror-test-');
  const repo = await createSampleRepo(join(root, 'sample'), files);
  // Parks the sample's few files too (a real goal parks trees of DEFAULT_WARM_MIN_FILES or more).
  const cache = new MirrorCache({ dir: join(root, 'workspaces', 'mirrors'), fetchIntervalMs: 0, warmMinFiles: 0, ...cacheOpts });
  const make = (goalId: string, opts: { remote?: string; cache?: MirrorCache } = {}) =>
    new GitWorkspace({
      remote: opts.remote ?? repo.bare,
      dir: join(root, 'workspaces', 'sample', goalId),
      goalId,
      branch: `goal/${goalId}`,
      identity: { name: 'goal-loop', email: 'bot@example.com' },
      syncIntervalMs: 0,
      mirrorCache: opts.cache ?? cache,
    });
  return { root, repo, cache, make };
}

/** A commit on the remote's main, pushed from the seeding clone; returns its sha. */
export function pushCommit(repo: SampleRepo, file: string, content: string): string {
  writeFileSync(join(repo.work, file), content);
  git(repo.work, 'add', '--all');
  git(repo.work, '-c', 'user.name=Human', '-c', 'user.email=h@example.com', 'commit', '--quiet', '-m', `edit ${file}`);
  git(repo.work, 'push', '--quiet', 'origin', 'main');
  return git(repo.work, 'rev-parse', 'HEAD');
}

/** Object count of every pack of a repository, by pack file name. */
export function packs(gitDir: string): Map<string, number> {
  const dir = join(gitDir, 'objects', 'pack');
  const out = new Map<string, number>();
  for (const n of readdirSync(dir).filter((f) => f.endsWith('.idx'))) {
    out.set(
      n,
      git(dir, 'verify-pack', '-v', n)
        .split('\n')
        .filter((l) => /^[0-9a-f]{40} /.test(l)).length,
    );
  }
  return out;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A lockfile held by another live process on this host (a `sleep` we kill after the test). */
export function foreignLock(path: string): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  writeFileSync(path, `${child.pid} ${hostname()} ${Date.now()}\n`);
  return child;
}
