import { execFile } from 'node:child_process';
import { SandboxUnavailableError } from '../ports/sandbox.js';

// execFile, not execa: one short `find` with a fixed env and a 1 MiB output cap, which execFile
// gives as well; execa would only add its per-call overhead (about 7 ms measured, see git.ts).
/**
 * Gives the workspace (everything but its `.git`) to the jail's uid so the jailed command can
 * write it. Only entries not already owned are changed; symlinks are changed themselves, never
 * followed (`find -P`, `chown -h`), so a link a task planted cannot redirect the change.
 * Called while no jailed process runs (the previous command's pid namespace is gone). Also
 * gives a setup's package store to its jail (`what`): no `.git` there to skip.
 */
export function handOverWorkspace(dir: string, uid: number, gid: number, what = 'workspace'): Promise<void> {
  const args = ['-P', '.', '-path', './.git', '-prune', '-o', '(', '!', '-uid', String(uid), '-o', '!', '-gid', String(gid), ')', '-exec', 'chown', '-h', `${uid}:${gid}`, '{}', '+'];
  return new Promise((resolve, reject) => {
    execFile('find', args, { cwd: dir, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) => {
      if (err) reject(new SandboxUnavailableError(`cannot give the ${what} ${dir} to the sandbox uid ${uid}: ${String(stderr).trim().split('\n').slice(-3).join(' | ') || err.message}`));
      else resolve();
    });
  });
}
