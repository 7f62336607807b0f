import { lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Device and inode of the workspace and of its `.git` (absent: undefined). */
export interface TreeIdentity {
  workspace: string;
  git: string | undefined;
}

/** What `workspace` and its `.git` are now; a bind mount keeps the directory it bound, not the path. */
export function treeIdentity(workspace: string): TreeIdentity | undefined {
  try {
    const ws = statSync(workspace);
    let git: string | undefined;
    try {
      const g = lstatSync(join(workspace, '.git'));
      git = `${g.dev}:${g.ino}:${g.isSymbolicLink() ? 'l' : ''}`;
    } catch {
      git = undefined;
    }
    return { workspace: `${ws.dev}:${ws.ino}`, git };
  } catch {
    return undefined;
  }
}

export function sameTree(a: TreeIdentity | undefined, b: TreeIdentity): boolean {
  return a !== undefined && a.workspace === b.workspace && a.git === b.git;
}
