import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Readies a parked tree for a new goal before git looks at it. Git's own checkout and clean then
 * restore content, the executable bit and symlinks; what they ignore is handled here:
 * - every `.git` (the tree's own and nested ones) goes: a previous goal's code may have planted
 *   hooks or config there, and the taker gets a fresh `.git` from the mirror;
 * - every `.gitattributes` goes (checkout restores the tracked ones): the index refresh would
 *   read them, and a planted one (e.g. `text`) could make an altered file hash as unchanged;
 * - files with more than one link go (git restores tracked ones): two paths sharing an inode would
 *   make a write to one change the other;
 * - modes a fresh checkout never has are reset: set-id and sticky bits, world-writable entries,
 *   and files or directories their owner cannot read or write (a read-only directory would also
 *   make `git clean` fail). Directories get `u+rwx` before find descends into them.
 * `find -P` never follows a symlink, so a link the goal planted redirects nothing.
 */
export async function scrubParkedTree(dir: string): Promise<void> {
  await rm(join(dir, '.git'), { recursive: true, force: true });
  const args = [
    '-P', '.',
    '(', '-name', '.git', '-o', '-name', '.gitattributes', ')', '-prune', '-exec', 'rm', '-rf', '{}', '+',
    '-o', '-type', 'l',
    '-o', '-type', 'f', '-links', '+1', '-exec', 'rm', '-f', '{}', '+',
    '-o', '-type', 'f', '(', '-perm', '/7002', '-o', '!', '-perm', '-u=rw', ')', '-exec', 'chmod', 'u+rw,ug-s,o-w,-t', '{}', '+',
    // One at a time: find then descends into the directory it just made readable.
    '-o', '-type', 'd', '!', '-perm', '-u=rwx', '-exec', 'chmod', 'u+rwx,u-s,o-w,-t', '{}', ';',
    // Set-group-ID is left on directories: one under a set-gid parent has it in a fresh clone too.
    '-o', '-type', 'd', '-perm', '/5002', '-exec', 'chmod', 'u-s,o-w,-t', '{}', '+',
  ];
  await new Promise<void>((resolve, reject) => {
    execFile('find', args, { cwd: dir, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`cannot scrub the parked tree ${dir}: ${String(stderr).trim().split('\n').slice(-3).join(' | ') || err.message}`));
      else resolve();
    });
  });
}
