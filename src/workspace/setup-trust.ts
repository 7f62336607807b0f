import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type Git, gitlinkPaths } from './git.js';

/** The header of `git status --porcelain=v2 --branch` that names the commit HEAD is on. */
const BRANCH_OID = '# branch.oid ';

/**
 * Whether this run's setup output may go into the setup cache: only when setup ran on the base
 * commit, on a tree that was exactly that commit's.
 *
 * The cache key names the setup and the blobs of `setup_inputs`, not every file setup reads (a
 * script, an `.npmrc`, a vendored tarball). On a goal branch a task may have rewritten one; its
 * output, kept under the key every clean goal computes, would be what they all restore. Keying
 * by the whole tree instead would miss on every new commit of the base branch; so a run on a goal
 * branch with task commits restores (a clean entry is safe anywhere) but never saves.
 *
 * The base commit is the base branch's tip as the host fetched it from the remote, which no task
 * can move (a task pushes nothing, and `.git` is read-only in the jail); never a goal branch,
 * even when a caller (the CLI's --base, an MCP client) names one as the base.
 *
 * Any other base a caller names (`--base feature-x`, a base a human approved over MCP) is trusted
 * for its own goals only: its name is part of the cache key (`keyBase`), so what setup made on
 * feature-x's setup script is never what a goal on main restores.
 */
export class SetupTrust {
  private base: string | undefined;
  private ranOn: string | undefined;
  /** `beforeSetup` looked since `prepared` (setup runs once per prepare: the restore and the store ask alike). */
  private looked = false;
  private baseName: string | undefined;
  private gitlinks: { commit: string; paths: string[] } | undefined;

  constructor(
    private readonly git: Git,
    private readonly dir: string,
    private readonly branches: { branch: string; baseBranch?: string | undefined },
  ) {}

  /**
   * After the checkout: `base` is the base branch's tip as fetched (read only when needed);
   * `remoteHead` what `refs/remotes/origin/HEAD` names, as prepare read it.
   */
  async prepared(base: () => Promise<string | undefined>, remoteHead: string | undefined): Promise<void> {
    this.ranOn = undefined;
    this.looked = false;
    const name = this.branches.baseBranch;
    this.base = name && (name === this.branches.branch || name.startsWith('goal/')) ? undefined : await base();
    // The remote's default branch by name, so naming it (`--base main`) or not keys alike.
    this.baseName = name ?? (remoteHead?.startsWith('refs/remotes/origin/') ? remoteHead.slice('refs/remotes/origin/'.length) : '');
  }

  /**
   * The gitlinks of `commit`'s tree, as prepare read them from the index it just checked out: a
   * look before setup at a clean tree on that commit need not ask git again.
   */
  noteGitlinks(commit: string, paths: string[]): void {
    this.gitlinks = { commit, paths };
  }

  /** The base branch's name, for the setup cache key ('' : the remote's default, not known by name). */
  keyBase(): string {
    if (this.baseName === undefined) throw new Error('the setup cache key needs the base branch: prepare the workspace first');
    return this.baseName;
  }

  /** Just before setup: notes HEAD if the tree holds nothing beyond it (no change, no untracked or ignored file). */
  async beforeSetup(): Promise<void> {
    if (this.looked) return;
    this.looked = true;
    // One look for both: the tree's changes and, in the branch header, the commit it is on. The
    // index's gitlinks, when prepare noted none (a fresh clone), are read beside it: both only read.
    const [out, listed] = await Promise.all([
      this.git.run(this.dir, ['status', '--porcelain=v2', '-z', '--branch', '--no-ahead-behind', '--ignored=matching', '--untracked-files=normal', '--ignore-submodules=all']),
      this.gitlinks ? undefined : gitlinkPaths(this.git, this.dir),
    ]);
    const status = out.split('\0');
    const head = status.find((e) => e.startsWith(BRANCH_OID))?.slice(BRANCH_OID.length);
    const clean = status.every((e) => e === '' || e.startsWith('# '));
    this.ranOn = clean && head && /^[0-9a-f]+$/.test(head) && (await this.submoduleFoldersEmpty(head, listed)) ? head : undefined;
  }

  /**
   * git status never looks into a submodule's folder, and git clean never empties it; goal-loop
   * never fills one, so whatever is there (a task's file, kept across runs in the same
   * workspace) is beyond the commit. Gitlinks prepare noted for `head` are those of the index it
   * checked out there (a staged gitlink would not show in this status, but only host git writes the
   * index, and a checkpoint refuses one).
   */
  private async submoduleFoldersEmpty(head: string, listed: string[] | undefined): Promise<boolean> {
    const paths = this.gitlinks?.commit === head ? this.gitlinks.paths : (listed ?? (await gitlinkPaths(this.git, this.dir)));
    for (const path of paths) {
      const st = await lstat(join(this.dir, path)).catch(() => undefined);
      if (st && (!st.isDirectory() || (await readdir(join(this.dir, path)).catch(() => ['unreadable'])).length > 0)) return false;
    }
    return true;
  }

  /** Why this run's setup output may not be kept, or undefined when it may. */
  async refusal(): Promise<string | undefined> {
    const head = await this.head();
    if (!this.base || head !== this.base) return 'setup ran on the goal branch, not on the base commit';
    if (this.ranOn !== head) return "the tree was not exactly the base commit's when setup ran";
    return undefined;
  }

  private head(): Promise<string> {
    return this.git.run(this.dir, ['rev-parse', 'HEAD']);
  }
}
