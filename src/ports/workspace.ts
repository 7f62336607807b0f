import type { Evidence } from '../goal/evidence.js';

/** A private git clone where one goal is worked; git is the checkpoint store. */
export interface Workspace {
  readonly dir: string;
  /** Branch that receives the checkpoints, e.g. `goal/auth-migration`. */
  readonly branch: string;
  /**
   * Clone or refresh, then check out the goal branch at the remote's tip (or the base branch
   * when the goal branch does not exist yet). Returns the checkpoints already on the remote.
   */
  prepare(): Promise<Checkpoint[]>;
  /** Brings in commits that others pushed to the goal branch since the last checkpoint. */
  sync(): Promise<void>;
  /** Files changed relative to the last checkpoint (tracked and untracked). */
  changedFiles(): Promise<string[]>;
  /** Commits everything as the task's checkpoint and pushes it. */
  checkpoint(input: CheckpointInput): Promise<Checkpoint>;
  /**
   * Commits the checkpoint as `checkpoint` does, without pushing it: the returned `push` is what
   * `publish` takes, off the critical path (the loop records it in the outbox). Optional, with `publish`.
   */
  commit?(input: CheckpointInput): Promise<Checkpoint>;
  /**
   * Pushes a checkpoint `commit` made to the goal branch, with the lease it returned. The
   * push may carry later checkpoints of this workspace too (one push for several). Done when the
   * remote already has it. Throws PushRejectedError when it can never be done (the remote branch
   * moved: someone else pushed; or no clone here holds the commit), any other error when a later
   * try may succeed. Safe while a jailed command runs: it reads only `.git`, which no jail can write.
   */
  publish?(push: PendingPush): Promise<void>;
  /**
   * Checkpoints waiting to go out together in one push (pushes may be spaced) go now: the loop
   * calls this when it waits for its pushes. Optional, with `publish`.
   */
  flushPushes?(): void;
  /**
   * After a rejected push: back to the goal branch as the remote has it (setup's output kept),
   * dropping the checkpoints that did not reach it. Returns the checkpoints on the remote.
   */
  resync?(): Promise<Checkpoint[]>;
  /**
   * Brings the goal branch onto its base branch's tip, when the base moved since the branch left
   * it: its commits replayed one by one (`rebase`, trailers kept), or one merge commit (`merge`;
   * a merge that conflicts is done as a rebase, so that the task that conflicts can be repaired).
   * Undefined when the base has not moved (or the branch has nothing of its own). The result's
   * `push` must reach the remote (it rewrites the branch, under a lease of the tip it had).
   * `tasks`: the goal's task ids (a commit naming another task counts as a person's).
   */
  followBase?(mode: FollowBaseMode, tasks: readonly string[]): Promise<BaseFollowed | undefined>;
  /**
   * After followBase, before its push: the branch without the replayed commit `sha` and those
   * after it (their tasks are done again). Returns the branch's checkpoints and the push now.
   */
  dropReplayedFrom?(sha: string): Promise<{ checkpoints: Checkpoint[]; push: PendingPush }>;
  /** Discards every change since the last checkpoint. */
  rollback(): Promise<void>;
  /**
   * After setup: what is in the tree now beyond the commit (ignored or not: dependencies, a
   * package store, generated files, a rewritten lockfile) is setup's output, kept by every
   * rollback and never part of a checkpoint, except a file a task then changes. Returns what
   * setup left that is not gitignored.
   */
  preserveIgnored(): Promise<string[]>;
  /**
   * Before setup: puts back what the same setup produced on this repository before (same
   * commands, same input files), if it is cached. True when it did, and setup need not run.
   */
  restoreSetup?(setup: SetupIdentity): Promise<boolean>;
  /** After a setup that passed (and `preserveIgnored`): keeps its output for the next run or goal. */
  saveSetup?(setup: SetupIdentity): Promise<void>;
  /**
   * Before setup runs its commands: the package store they get read-write (outside the tree, one
   * per repository), with the variables for the package managers this tree uses; undefined when
   * there is none to give. The caller releases it when setup ends.
   */
  packageStore?(): Promise<PackageStoreGrant | undefined>;
  /** The current checkpoint commit. */
  head(): Promise<string>;
  /**
   * The tree the next verification would see without any change since the last checkpoint: a
   * key under which a baseline result can be reused (same command, same tree). Optional.
   */
  treeKey?(): Promise<string>;
  /**
   * `verify_with_base_tests`: puts the last checkpoint's versions of the files that match `globs`
   * and existed at the goal's base back over the tree (changed or deleted since). Returns their paths.
   */
  restoreTestFiles?(globs: readonly string[]): Promise<string[]>;
  /**
   * Deletes the workspace once its goal is at rest (COMPLETE, ESCALATED, STOPPED); the caller
   * decides when. Optional: a workspace without it keeps its files.
   */
  release?(): Promise<void>;
}

export interface PackageStoreGrant {
  /** The host folder setup's jail binds read-write at the same path. */
  dir: string;
  /** The variables that point the detected package managers at it. */
  env: Record<string, string>;
  /** The repository's store, kept for its next setup (false: a throwaway one). */
  kept: boolean;
  /** The package managers detected (for the log). */
  managers: string[];
  release(): Promise<void>;
}

export interface CheckpointInput {
  goalId: string;
  taskId: string;
  title: string;
  attempt: number;
  /** Extra commit-message body (e.g. the verification summary). */
  body?: string;
  /** What the verification proves: the `Goal-Verified` trailer (DESIGN.md §10). */
  evidence?: Evidence;
  /**
   * Globs of test files: the checkpoint is refused (TestFilesChangedError) when it changes or
   * deletes a matching file that existed at the goal's base. Adding new ones is allowed.
   */
  testPaths?: readonly string[];
  /**
   * Names of root package.json scripts the verification runs (`test` for `npm test`): the
   * checkpoint is refused (VerificationScriptChangedError) when it adds, changes or removes any
   * of them or its `pre`/`post` hook against the goal's base. The rest of package.json is free.
   */
  protectedScripts?: readonly string[];
}

export interface Checkpoint {
  taskId: string;
  sha: string;
  attempt?: number;
  /** The `Goal-Verified` trailer, when the commit has one. */
  evidence?: Evidence;
  /** What the checkpoint changed against the one before. */
  stat?: DiffStat;
  /** Committed, not pushed yet: what `publish` needs. */
  push?: PendingPush;
}

/** A checkpoint to push: its commit, and the goal branch's tip the remote must still have (`''`: no branch yet). */
export interface PendingPush {
  sha: string;
  lease: string;
}

/** A push that no later try can do: the remote's goal branch moved (someone else pushed), or the commit is not here. */
export class PushRejectedError extends Error {
  override name = 'PushRejectedError';
}

/** A diffstat: totals over every file, and the first files by name (binary: null counts). */
export interface DiffStat {
  files: number;
  insertions: number;
  deletions: number;
  paths: Array<{ path: string; added: number | null; deleted: number | null }>;
}

/** The checkpoint was refused for a reason the repair loop can act on (e.g. protected paths). */
export class CheckpointRefusedError extends Error {
  override name = 'CheckpointRefusedError';
}

/** The checkpoint would change or delete test files that existed at the goal's base. */
export class TestFilesChangedError extends CheckpointRefusedError {
  override name = 'TestFilesChangedError';
  constructor(
    /** Each refused file with what the task did to it. */
    readonly files: ReadonlyArray<{ path: string; change: 'modified' | 'deleted' }>,
  ) {
    const listed = files.slice(0, 10).map((f) => `${f.path} (${f.change})`);
    super(
      `checkpoint refused: the change modifies or deletes test files that existed before the goal: ${listed.join(', ')}${files.length > 10 ? `, and ${files.length - 10} more` : ''}. ` +
        'A task may add new tests but not change or delete existing ones (they are what verifies it); put these files back as they were and make the code pass them.',
    );
  }
}

/** A package.json script the verification runs, as the checkpoint would change it. */
export interface ScriptChange {
  name: string;
  change: 'added' | 'changed' | 'removed';
}

/**
 * The checkpoint would change how the task's verification runs: a package.json script it runs
 * (or its pre/post hook), or package.json left unreadable so that this cannot be checked.
 * Names only, never the scripts' text (the task's data).
 */
export class VerificationScriptChangedError extends CheckpointRefusedError {
  override name = 'VerificationScriptChangedError';
  constructor(
    readonly scripts: readonly ScriptChange[],
    /** Why package.json could not be compared, when it could not. */
    readonly unreadable?: string,
  ) {
    const listed = scripts.slice(0, 10).map((s) => `${quoteName(s.name)} (${s.change})`);
    super(
      unreadable
        ? `checkpoint refused: package.json ${unreadable}, so it cannot be checked that the scripts the verification runs are unchanged. ` +
            'A task may not change how its verification runs; leave package.json valid JSON with those scripts as they were.'
        : `checkpoint refused: the change alters package.json scripts that the verification runs: ${listed.join(', ')}${scripts.length > 10 ? `, and ${scripts.length - 10} more` : ''}. ` +
            'A task may not change how its verification runs; put these scripts back as they were and make the code pass.',
    );
  }
}

/** A script name for a message: quoted, escaped, at most 60 characters. */
function quoteName(name: string): string {
  return JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}…` : name);
}

/** What makes two setups the same, besides the files they read (the workspace knows those). */
export interface SetupIdentity {
  commands: readonly string[];
  network: boolean;
}

export type FollowBaseMode = 'rebase' | 'merge';

/** What following the base did to the goal branch (see Workspace.followBase). */
export interface BaseFollowed {
  /** `merge` only when the merge went through; a conflicting merge is done as a rebase. */
  mode: FollowBaseMode;
  /** The base commit the branch had left from, and the base branch's tip it is on now. */
  from: string;
  onto: string;
  /** The checkpoints on the branch now, oldest first (what the run starts from). */
  checkpoints: Checkpoint[];
  /** Checkpoints carried onto the new base (new commits for a rebase, the same for a merge), oldest first. */
  replayed: Array<{ taskId: string; sha: string }>;
  /** The commit that no longer applies: its task (none: a commit of a person's), the files in conflict, and what git said. */
  conflict?: { taskId?: string; sha: string; files: string[]; detail: string };
  /** Tasks whose checkpoints came after the conflict: left out of the branch, to be done again. */
  dropped: string[];
  /** Every commit the branch has of its own now, oldest first: a task's checkpoint, or (no task) a person's. */
  commits: Array<{ sha: string; taskId?: string }>;
  /** Why the mode differs from the one asked for, if it does. */
  note?: string;
  /**
   * Absent: the branch was left as it was (the conflict is a person's commit, or one would be
   * lost: no task can redo it). Else the rewritten branch's push.
   */
  push?: PendingPush;
}
