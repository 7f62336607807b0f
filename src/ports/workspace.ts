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
  /** The current checkpoint commit. */
  head(): Promise<string>;
  /**
   * Deletes the workspace once its goal is at rest (COMPLETE, ESCALATED, STOPPED); the caller
   * decides when. Optional: a workspace without it keeps its files.
   */
  release?(): Promise<void>;
}

export interface CheckpointInput {
  goalId: string;
  taskId: string;
  title: string;
  attempt: number;
  /** Extra commit-message body (e.g. the verification summary). */
  body?: string;
}

export interface Checkpoint {
  taskId: string;
  sha: string;
  attempt?: number;
  /** What the checkpoint changed against the one before. */
  stat?: DiffStat;
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

/** What makes two setups the same, besides the files they read (the workspace knows those). */
export interface SetupIdentity {
  commands: readonly string[];
  network: boolean;
}
