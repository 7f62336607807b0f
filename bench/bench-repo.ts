import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Runs a command for a benchmark's setup; its output is not part of any figure. */
export function sh(cwd: string, cmd: string, ...args: string[]): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** A bare repository under `root` with `files` (path -> content) in one commit on main. */
export function makeBareRepo(root: string, files: Record<string, string>): string {
  const work = join(root, 'seed');
  mkdirSync(work, { recursive: true });
  sh(work, 'git', 'init', '-q', '--initial-branch=main');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(work, path, '..'), { recursive: true });
    writeFileSync(join(work, path), content);
  }
  sh(work, 'git', 'add', '-A');
  sh(work, 'git', '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'seed');
  const bare = join(root, 'origin.git');
  sh(root, 'git', 'clone', '-q', '--bare', work, bare);
  return bare;
}
