import { execa } from 'execa';

/**
 * What setup output costs on disk and what its modes allow, read by the host without following
 * a link (`du -P`, `find -P`). Only ever run where no jailed process can change the tree meanwhile:
 * a workspace between two commands, or the host's own cache folder.
 */

export interface DiskUsage {
  /** Blocks in use (st_blocks * 512): what the files cost the disk, whatever they claim. */
  allocated: number;
  /** Sizes the files claim: a sparse file claims far more than it uses. */
  apparent: number;
}

/** Both sizes of `roots` together (a file linked twice counted once); throws when `du` cannot read them all. */
export async function diskUsage(roots: readonly string[]): Promise<DiskUsage> {
  if (roots.length === 0) return { allocated: 0, apparent: 0 };
  const [allocated, apparent] = await Promise.all([du(['--block-size=1'], roots), du(['--bytes'], roots)]);
  return { allocated, apparent };
}

async function du(flags: string[], roots: readonly string[]): Promise<number> {
  const { stdout } = await execa('du', ['-P', '-s', '-c', ...flags, '--', ...roots], { env: { LC_ALL: 'C' } });
  const total = /^(\d+)\s/.exec(stdout.trim().split('\n').at(-1) ?? '');
  if (!total) throw new Error(`du printed no total for ${roots.join(', ')}`);
  return Number(total[1]);
}

/**
 * Clears set-uid and set-gid on every file and folder under `roots` (links are never followed,
 * nor changed): setup output is data, and a set-uid file in the host's cache or in the next
 * goal's workspace would run as the jail's user for whoever starts it.
 */
export async function stripSetIds(roots: readonly string[]): Promise<void> {
  if (roots.length === 0) return;
  await execa('find', ['-P', ...roots, '(', '-type', 'f', '-o', '-type', 'd', ')', '-perm', '/6000', '-exec', 'chmod', 'u-s,g-s', '--', '{}', '+'], { env: { LC_ALL: 'C' } });
}
