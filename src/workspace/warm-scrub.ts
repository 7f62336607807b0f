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
 * - files whose mode a fresh checkout would not give (0666 or 0777 less the umask) go, so set-id
 *   bits, read-only or world-writable files do not survive; directories get the checkout's mode
 *   back, one at a time, before find descends into them (set-group-ID kept: a directory under a
 *   set-gid parent has it in a fresh clone too).
 * `find -P` never follows a symlink, so a link the goal planted redirects nothing.
 */
export async function scrubParkedTree(dir: string): Promise<void> {
  await rm(join(dir, '.git'), { recursive: true, force: true });
  const umask = process.umask();
  const [file, exe] = [0o666 & ~umask, 0o777 & ~umask].map((m) => m.toString(8));
  const args = [
    '-P',
    '.',
    '(',
    '-name',
    '.git',
    '-o',
    '-name',
    '.gitattributes',
    ')',
    '-prune',
    '-exec',
    'rm',
    '-rf',
    '{}',
    '+',
    '-o',
    '-type',
    'l',
    '-o',
    '-type',
    'f',
    '(',
    '-links',
    '+1',
    '-o',
    '!',
    '-perm',
    file!,
    '!',
    '-perm',
    exe!,
    ')',
    '-exec',
    'rm',
    '-f',
    '{}',
    '+',
    '-o',
    '-type',
    'd',
    '!',
    '-perm',
    exe!,
    '!',
    '-perm',
    (0o2000 | (0o777 & ~umask)).toString(8),
    '-exec',
    'chmod',
    symbolic(0o777 & ~umask),
    '{}',
    ';',
  ];
  await new Promise<void>((resolve, reject) => {
    execFile('find', args, { cwd: dir, env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, maxBuffer: 1024 * 1024 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`cannot scrub the parked tree ${dir}: ${String(stderr).trim().split('\n').slice(-3).join(' | ') || err.message}`));
      else resolve();
    });
  });
}

/** `u=rwx,g=rx,o=rx,u-s,-t` for 0755: symbolic, because numeric chmod keeps a directory's set-id bits. */
function symbolic(mode: number): string {
  const bits = (shift: number) => ['r', 'w', 'x'].filter((_, i) => mode & ((0o4 << shift) >> i)).join('');
  return `u=${bits(6)},g=${bits(3)},o=${bits(0)},u-s,-t`;
}
