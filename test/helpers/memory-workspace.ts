import { createHash } from 'node:crypto';
import { type Checkpoint, type CheckpointInput, CheckpointRefusedError, type Workspace } from '../../src/ports/workspace.js';

type Files = Map<string, string>;

/** One commit on a memory remote: a checkpoint (with its goal and task) or anyone else's commit. */
export interface MemoryCommit {
  sha: string;
  message: string;
  files: Files;
  goalId?: string;
  taskId?: string;
  attempt?: number;
}

let commits = 0;
const nextSha = () => createHash('sha1').update(`memory-commit-${++commits}`).digest('hex');

/** The remote's branches, as lists of commits: what git would hold, for the fast test tier. */
export class MemoryRemote {
  readonly branches = new Map<string, MemoryCommit[]>();

  constructor(readonly baseFiles: Record<string, string> = { 'README.md': 'sample\n' }) {}

  log(branch: string): MemoryCommit[] {
    return this.branches.get(branch) ?? [];
  }

  /** The checkpoints on a branch, oldest first, as their task ids. */
  checkpointTasks(branch: string): string[] {
    return this.log(branch).flatMap((c) => (c.taskId ? [c.taskId] : []));
  }

  /** The files at the tip of a branch (the base files when it does not exist yet). */
  filesAt(branch: string): Files {
    return new Map(this.log(branch).at(-1)?.files ?? Object.entries(this.baseFiles));
  }

  /** Someone else (a human) pushes a commit to the branch. */
  push(branch: string, message: string, change: Record<string, string | null>): MemoryCommit {
    const files = this.filesAt(branch);
    for (const [path, content] of Object.entries(change)) {
      if (content === null) files.delete(path);
      else files.set(path, content);
    }
    return this.append(branch, { sha: nextSha(), message, files });
  }

  append(branch: string, commit: MemoryCommit): MemoryCommit {
    this.branches.set(branch, [...this.log(branch), commit]);
    return commit;
  }
}

export interface MemoryWorkspaceOptions {
  goalId: string;
  branch: string;
  dir?: string;
  /** Paths a checkpoint may not change (as the git workspace's protected paths). */
  protectedPaths?: string[];
  /** `prepare` throws this (a remote that cannot be reached). */
  prepareError?: Error;
}

/**
 * A Workspace whose tree is a map of files and whose checkpoints are commits on a MemoryRemote.
 * A rollback puts back the last checkpoint's files (and what setup left, as the git workspace keeps
 * it); a checkpoint that changes a protected path is refused. The scripted sandbox edits `files`.
 */
export class MemoryWorkspace implements Workspace {
  readonly dir: string;
  readonly branch: string;
  /** The working tree. */
  files: Files = new Map();
  private headFiles: Files = new Map();
  private headSha = '';
  /** What setup left beyond the commit, kept by every rollback. */
  private preserved: Files = new Map();
  readonly calls: string[] = [];

  constructor(
    private readonly remote: MemoryRemote,
    private readonly o: MemoryWorkspaceOptions,
  ) {
    this.dir = o.dir ?? `/memory-workspace/${o.goalId}`;
    this.branch = o.branch;
  }

  async prepare(): Promise<Checkpoint[]> {
    this.calls.push('prepare');
    if (this.o.prepareError) throw this.o.prepareError;
    this.reset();
    const seen = new Set<string>();
    const out: Checkpoint[] = [];
    for (const c of this.remote.log(this.branch)) {
      if (!c.taskId || c.goalId !== this.o.goalId || seen.has(c.taskId)) continue;
      seen.add(c.taskId);
      out.push({ taskId: c.taskId, sha: c.sha, ...(c.attempt !== undefined ? { attempt: c.attempt } : {}) });
    }
    return out;
  }

  async sync(): Promise<void> {
    this.calls.push('sync');
    const tip = this.remote.log(this.branch).at(-1);
    if (!tip || tip.sha === this.headSha) return;
    for (const [path, content] of tip.files) if (this.headFiles.get(path) !== content) this.files.set(path, content);
    this.headFiles = new Map(tip.files);
    this.headSha = tip.sha;
  }

  async changedFiles(): Promise<string[]> {
    const paths = new Set([...this.files.keys(), ...this.headFiles.keys()]);
    return [...paths].filter((p) => !this.preserved.has(p) && this.files.get(p) !== this.headFiles.get(p)).sort();
  }

  async checkpoint(input: CheckpointInput): Promise<Checkpoint> {
    this.calls.push(`checkpoint ${input.taskId}`);
    const changed = await this.changedFiles();
    const refused = changed.filter((p) => (this.o.protectedPaths ?? []).some((prefix) => p.startsWith(prefix)));
    if (refused.length > 0) throw new CheckpointRefusedError(`the change touches protected paths (${refused.join(', ')})`);
    const files = new Map(this.headFiles);
    for (const p of changed) {
      const content = this.files.get(p);
      if (content === undefined) files.delete(p);
      else files.set(p, content);
    }
    const commit = this.remote.append(this.branch, { sha: nextSha(), message: `${input.taskId}: ${input.title}`, files, goalId: input.goalId, taskId: input.taskId, attempt: input.attempt });
    this.headFiles = new Map(files);
    this.headSha = commit.sha;
    return {
      taskId: input.taskId,
      sha: commit.sha,
      attempt: input.attempt,
      stat: { files: changed.length, insertions: changed.length, deletions: 0, paths: changed.map((path) => ({ path, added: 1, deleted: 0 })) },
    };
  }

  async rollback(): Promise<void> {
    this.calls.push('rollback');
    this.files = new Map([...this.headFiles, ...this.preserved]);
  }

  async preserveIgnored(): Promise<string[]> {
    for (const [path, content] of this.files) if (this.headFiles.get(path) !== content) this.preserved.set(path, content);
    return [];
  }

  async head(): Promise<string> {
    return this.headSha;
  }

  private reset(): void {
    const tip = this.remote.log(this.branch).at(-1);
    this.headFiles = this.remote.filesAt(this.branch);
    this.headSha = tip?.sha ?? 'base';
    this.files = new Map(this.headFiles);
    this.preserved = new Map();
  }
}
