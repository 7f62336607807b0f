import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crashPoint } from '../common/crash-point.js';
import { protectedMatches } from '../config/protected-paths.js';
import {
  type BaseFollowed,
  type Checkpoint,
  type CheckpointInput,
  CheckpointRefusedError,
  type FollowBaseMode,
  type PackageStoreGrant,
  type PendingPush,
  PushRejectedError,
  type SetupIdentity,
  type Workspace,
} from '../ports/workspace.js';
import { replayOntoBase } from './base-follower.js';
import { BranchPublisher } from './branch-publisher.js';
import { Git, GitError, type GitOptions, gitlinkPaths } from './git.js';
import type { MirrorCache } from './mirror-cache.js';
import { NestedRepositoryError, NestedScanMemo, refuseNestedRepositories, removeNestedRepositories } from './nested-repos.js';
import { detectPackageManagers, packageStoreEnv } from './package-managers.js';
import { refuseChangedPackageScripts } from './package-scripts.js';
import type { PackageStores } from './package-stores.js';
import { type RemoteRef, remoteRefs } from './remote-refs.js';
import type { RestoredSetup, SetupCache } from './setup-cache.js';
import { dropSetupFolders, SetupOutput } from './setup-output.js';
import { SetupTrust } from './setup-trust.js';
import { parseStagedDiff } from './staged-diff.js';
import { refuseChangedTestFiles, restoreBaseTestFiles } from './test-files.js';
import { CHECKPOINT_LOG_FORMAT, checkpointMessage, parseCheckpointLog } from './trailers.js';
import { scrubParkedTree } from './warm-scrub.js';

/** See BranchPublisher: checkpoints that come quicker than this go out in one push. */
export const DEFAULT_PUSH_INTERVAL_MS = 1000;

export interface GitWorkspaceOptions extends GitOptions {
  /** The least time between the starts of two pushes of checkpoints (default DEFAULT_PUSH_INTERVAL_MS). */
  pushIntervalMs?: number;
  /** Path or URL of the repository to clone and push to. */
  remote: string;
  /** Where the private clone lives. */
  dir: string;
  goalId: string;
  branch: string;
  /** Branch to start from when the goal branch does not exist yet; default: the remote's HEAD. */
  baseBranch?: string;
  /** What the nested-repository search remembers between searches (default: its own, racy window 2 s). */
  nestedScanMemo?: NestedScanMemo;
  protectedPaths?: readonly string[];
  /**
   * Minimum time between two fetches of the goal branch in `sync` (default 5 s). A push that a
   * human made in between is still never lost: our push is then rejected, and the retry syncs.
   */
  syncIntervalMs?: number;
  /**
   * Clone from a local mirror of the remote (kept up to date incrementally) instead of
   * downloading the repository again for every goal.
   */
  mirrorCache?: MirrorCache;
  /**
   * Without a mirror (a local path, cloned directly): the cache whose parked trees a new clone
   * reuses, and where `release` parks this one, under the same bound as a URL's.
   */
  parkCache?: MirrorCache;
  /** Keep setup's output per repository, and put it back for the next run or goal (see SetupCache). */
  setupCache?: SetupCache;
  /** The files setup reads (lockfiles): their blobs at the commit key the cache. */
  setupInputs?: readonly string[];
  /** Package managers' stores, one per repository, outside the tree (see PackageStores). */
  packageStores?: PackageStores;
}

const REMOTE = 'origin';

/**
 * The goal's private clone. Checkpoints are commits on the goal branch, pushed to the remote;
 * the remote branch is the truth a resume reads.
 */
export class GitWorkspace implements Workspace {
  readonly dir: string;
  readonly branch: string;
  private readonly git: Git;
  /** The last checkpoint known to be on the remote: rollback target. */
  private lastCheckpoint = '';
  /** The commit the goal started from: the test files there are the ones its tasks may not change. */
  private goalBase = '';
  /** The goal branch's tip on the remote as last seen ('' when it has none): the push's lease. */
  private remoteTip = '';
  /** `.git/config` as we wrote it; restored if anything changes it. */
  private trustedConfig = '';
  /** What setup left beyond the commit: kept by rollbacks, left out of checkpoints, cached. */
  private readonly setupOutput: SetupOutput;
  private lastFetchAt = 0;
  private mustSync = false;
  /** What the nested-repository search saw: it reads again only the folders changed since. */
  private readonly scanMemo: NestedScanMemo;
  /** Pushes the checkpoints, off the critical path. */
  private readonly publisher: BranchPublisher;
  /** Whether setup's output may be cached: only from setup on the base commit. */
  private readonly setupTrust: SetupTrust;
  /** What the setup cache just put back, until the next `preserveIgnored` (see there). */
  private justRestored: RestoredSetup | undefined;

  constructor(private readonly opts: GitWorkspaceOptions) {
    this.dir = opts.dir;
    this.branch = opts.branch;
    this.git = new Git(opts);
    this.setupOutput = new SetupOutput(this.git, this.dir);
    this.publisher = new BranchPublisher(this.git, this.dir, this.branch, opts.pushIntervalMs ?? DEFAULT_PUSH_INTERVAL_MS);
    this.scanMemo = opts.nestedScanMemo ?? new NestedScanMemo();
    this.setupTrust = new SetupTrust(this.git, this.dir, { branch: opts.branch, baseBranch: opts.baseBranch });
  }

  async prepare(): Promise<Checkpoint[]> {
    const tree = await this.cloneOrReuse();
    const parked = tree === 'parked';
    // A clone reused from an earlier run may hold what its last task left behind.
    await removeNestedRepositories(this.dir, this.scanMemo);
    await this.opts.mirrorCache?.pin(this.opts.remote, this.dir);
    this.lastFetchAt = Date.now();
    const remoteRef = `refs/remotes/${REMOTE}/${this.branch}`;
    const refs = await remoteRefs(this.git, this.dir, REMOTE);
    const onRemote = refs.has(remoteRef) ? await this.commitOf(remoteRef, refs) : undefined;
    const start = onRemote ?? (await this.baseCommit(refs));
    if (this.opts.setupCache || this.opts.packageStores) {
      await this.setupTrust.prepared(async () => (onRemote ? this.baseCommit(refs).catch(() => undefined) : start), refs.get(`refs/remotes/${REMOTE}/HEAD`)?.symref);
    }
    // The setup cache's key reads the input files' blobs from objects only: beside the checkout.
    if (this.opts.setupCache) this.setupOutput.readInputs(start, this.opts.setupInputs ?? []);
    // A parked tree: index the files already there (hashed, not rewritten), so the checkout
    // writes only those that differ from `start`. Exit status ignored: checkout --force decides.
    if (parked) {
      await this.git.run(this.dir, ['read-tree', start]);
      await this.git.tryRun(this.dir, ['update-index', '-q', '--refresh']);
    }
    await this.git.run(this.dir, ['checkout', '--quiet', '--force', '-B', this.branch, start]);
    // A parked tree's submodule folders are listed while git clean runs (both read the index only).
    // A fresh clone's checkout left nothing to clean.
    const [, gitlinks] = await Promise.all([tree === 'fresh' ? undefined : this.git.run(this.dir, ['clean', '-ffdxq']), parked ? gitlinkPaths(this.git, this.dir) : undefined]);
    if (gitlinks) this.setupTrust.noteGitlinks(start, await this.emptySubmoduleDirs(gitlinks));
    this.lastCheckpoint = start;
    this.remoteTip = onRemote ?? '';
    this.publisher.forget();
    this.goalBase = onRemote ? await this.resumedBase(onRemote, refs) : start;
    return onRemote ? this.readCheckpoints(remoteRef) : [];
  }

  async sync(): Promise<void> {
    this.justRestored = undefined; // a command may have run since the restore
    await this.guardGitDir();
    if (!this.mustSync && Date.now() - this.lastFetchAt < (this.opts.syncIntervalMs ?? 5000)) return;
    await this.publisher.exclusive(async () => {
      // Our pushes still under way: the remote is behind us, not ahead; if someone else pushed,
      // our push is rejected, and the loop resyncs.
      if (this.publisher.pending > 0) return;
      const remoteTip = await this.fetchBranch();
      this.mustSync = false;
      this.remoteTip = remoteTip ?? '';
      if (!remoteTip || remoteTip === this.lastCheckpoint) return;
      // Someone else (a human) pushed to the goal branch: their commits win, ours are already pushed.
      await this.resetTo(remoteTip);
    });
  }

  async changedFiles(): Promise<string[]> {
    await this.guardGitDir();
    await refuseNestedRepositories(this.dir, [], this.scanMemo);
    const out = await this.git.run(this.dir, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=all', '--', '.', ...this.setupOutput.excludes(true)]);
    return out
      .split('\0')
      .filter((e) => e.length > 3)
      .map((e) => e.slice(3));
  }

  async checkpoint(input: CheckpointInput): Promise<Checkpoint> {
    const before = this.lastCheckpoint;
    const { push, ...cp } = await this.commit(input);
    this.publisher.hurry(); // pushed inline: nothing to wait for
    try {
      await this.publish(push!);
    } catch (err) {
      // Not pushed means not a checkpoint: forget the local commit so a retry starts clean.
      await this.git.run(this.dir, ['reset', '--quiet', '--hard', before]).catch(() => undefined);
      this.lastCheckpoint = before;
      this.remoteTip = push!.lease;
      this.publisher.forget();
      this.mustSync = true;
      throw err;
    }
    return cp;
  }

  async commit(input: CheckpointInput): Promise<Checkpoint> {
    this.justRestored = undefined; // a command may have run since the restore
    await this.guardGitDir();
    // Before `add`: it would run a nested repository's filters (no setting stops that).
    await refuseNestedRepositories(this.dir, [], this.scanMemo);
    // What setup produced is not the task's: its folders are never added, and a file it wrote goes
    // in only once the task changed it (its blob then differs from the one setup left).
    await this.git.run(this.dir, ['add', '--all', '--', '.', ...this.setupOutput.excludes(false)]);
    await this.setupOutput.unstageUntouched();
    const { staged, stat } = parseStagedDiff(await this.git.run(this.dir, ['diff', '--cached', '--raw', '--numstat', '-z', '--no-renames', '--ignore-submodules=none', 'HEAD']));
    // A second line behind the nested-repository scan: no checkpoint adds or moves a submodule
    // pointer, so the only gitlinks are the repository's own (whose folders stay empty).
    const gitlinks = staged.filter((e) => e.newMode === '160000').map((e) => e.path);
    if (gitlinks.length > 0) {
      await this.git.run(this.dir, ['reset', '--quiet']);
      throw new NestedRepositoryError(gitlinks);
    }
    const hits = protectedMatches(
      staged.map((e) => e.path),
      this.opts.protectedPaths ?? [],
    );
    if (hits.length > 0) {
      await this.git.run(this.dir, ['reset', '--quiet']);
      throw new CheckpointRefusedError(
        `checkpoint refused: the change touches protected paths (${hits.slice(0, 5).join(', ')}${hits.length > 5 ? ', …' : ''}). ` +
          `Leave files matching ${(this.opts.protectedPaths ?? []).join(', ')} unchanged.`,
      );
    }
    if (input.testPaths?.length) await refuseChangedTestFiles(this.git, this.dir, this.goalBase || this.lastCheckpoint, staged, input.testPaths);
    if (input.protectedScripts?.length) await refuseChangedPackageScripts(this.git, this.dir, this.goalBase || this.lastCheckpoint, staged, input.protectedScripts, this.setupOutput.paths);
    await this.git.run(this.dir, ['commit', '--quiet', '--no-verify', '--allow-empty', '--cleanup=verbatim', '-F', '-'], checkpointMessage(input));
    const sha = await this.committedHead();
    crashPoint('checkpoint-committed');
    // Pushed by `publish`, off the critical path. The lease is the tip the remote has once the
    // pushes before this one are done: a push someone made since is never overwritten.
    const push = { sha, lease: this.remoteTip };
    this.publisher.committed(push);
    this.lastCheckpoint = sha;
    this.remoteTip = sha;
    return { taskId: input.taskId, sha, attempt: input.attempt, ...(input.evidence ? { evidence: input.evidence } : {}), stat, push };
  }

  flushPushes(): void {
    this.publisher.hurry();
  }

  async publish(p: PendingPush): Promise<void> {
    await this.publisher.publish(p, async () => {
      // A run that died left the push: this instance never prepared the clone.
      if (!this.trustedConfig) await this.adoptClone(p.sha);
      await this.guardGitDir();
    });
  }

  async resync(): Promise<Checkpoint[]> {
    this.justRestored = undefined;
    await this.guardGitDir();
    return this.publisher.exclusive(async () => {
      const remoteTip = await this.fetchBranch();
      this.publisher.forget();
      this.mustSync = false;
      this.remoteTip = remoteTip ?? '';
      const target = remoteTip ?? (this.goalBase || this.lastCheckpoint);
      await this.resetTo(target);
      // Back on the remote's branch: its base is where it left the base branch (a followed base not pushed is not it).
      if (remoteTip) this.goalBase = await this.resumedBase(remoteTip);
      return remoteTip ? this.readCheckpoints(`refs/remotes/${REMOTE}/${this.branch}`) : [];
    });
  }

  async followBase(mode: FollowBaseMode, tasks: readonly string[]): Promise<BaseFollowed | undefined> {
    this.justRestored = undefined;
    await this.guardGitDir();
    return this.publisher.exclusive(async () => {
      if (this.publisher.pending > 0) throw new Error('cannot follow the base branch while checkpoints wait to be pushed');
      // Right after prepare (a run's start), the remote was just fetched.
      if (Date.now() - this.lastFetchAt >= (this.opts.syncIntervalMs ?? 5000)) {
        await this.git.run(this.dir, ['fetch', '--quiet', '--prune', '--no-tags', REMOTE]);
        this.lastFetchAt = Date.now();
      }
      const onto = await this.baseCommit();
      const head = this.lastCheckpoint;
      const from = this.goalBase || head;
      // Nothing of the goal's yet, or the base is already in the branch: nothing to follow.
      if (!this.remoteTip || head === from || onto === from || (await this.git.tryRun(this.dir, ['merge-base', '--is-ancestor', onto, head])) !== undefined) return undefined;
      const replay = { git: this.git, dir: this.dir, goalId: this.opts.goalId, head, from, onto, tasks: new Set(tasks), resetTo: (target: string) => this.resetTo(target) };
      const { tip, kept, conflict, ...done } = await replayOntoBase(replay, mode);
      const checkpoints = await this.readCheckpoints('HEAD');
      const { personal: _p, ...told } = conflict ?? { personal: false };
      const result = { ...done, ...(conflict ? { conflict: told as NonNullable<BaseFollowed['conflict']> } : {}), checkpoints };
      if (kept) return result;
      crashPoint('base-followed');
      const push = { sha: tip, lease: this.remoteTip };
      this.publisher.committed(push);
      this.remoteTip = tip;
      this.goalBase = onto;
      return { ...result, push };
    });
  }

  async dropReplayedFrom(sha: string): Promise<{ checkpoints: Checkpoint[]; push: PendingPush }> {
    await this.guardGitDir();
    return this.publisher.exclusive(async () => {
      const lease = this.publisher.oldestLease();
      if (lease === undefined) throw new Error('no rewritten branch waits to be pushed');
      await this.resetTo(await this.git.run(this.dir, ['rev-parse', '--verify', `${sha}~1`]));
      const push = { sha: this.lastCheckpoint, lease };
      this.publisher.forget();
      this.publisher.committed(push);
      this.remoteTip = push.sha;
      return { checkpoints: await this.readCheckpoints('HEAD'), push };
    });
  }

  async rollback(): Promise<void> {
    this.justRestored = undefined; // a command may have run since the restore
    await this.guardGitDir();
    await this.resetTo(this.lastCheckpoint);
  }

  /** The tree at `target`, setup's output kept, no nested repository left first; `target` is the rollback point from now on. */
  private async resetTo(target: string): Promise<void> {
    await removeNestedRepositories(this.dir, this.scanMemo);
    await this.git.run(this.dir, ['reset', '--quiet', '--hard', target]);
    await this.clean();
    this.lastCheckpoint = target;
  }

  async preserveIgnored(): Promise<string[]> {
    await this.guardGitDir();
    // What the host just moved in from its setup cache was searched when it was saved, and no
    // command ran since; every checkpoint still searches it (a task may plant a repository there).
    const restored = this.justRestored;
    this.justRestored = undefined;
    await refuseNestedRepositories(this.dir, restored?.paths ?? [], this.scanMemo);
    return this.setupOutput.record(restored?.untrackedDirs ?? []);
  }

  async restoreSetup(setup: SetupIdentity): Promise<boolean> {
    const cache = this.opts.setupCache;
    if (!cache) return false;
    await this.guardGitDir();
    const key = await this.setupOutput.key(this.setupTrust.keyBase(), setup, this.opts.setupInputs ?? [], this.lastCheckpoint);
    this.justRestored = undefined;
    const outcome = await cache.restore(this.opts.remote, key, this.dir, {
      onRestored: (restored) => {
        this.justRestored = restored;
        if (restored.listing) this.scanMemo.adopt(restored.listing);
      },
    });
    if (outcome === 'failed') {
      // Half a copy is no baseline: back to the checkout, and setup runs.
      await removeNestedRepositories(this.dir, this.scanMemo);
      await this.git.run(this.dir, ['reset', '--quiet', '--hard', this.lastCheckpoint]);
      await this.git.run(this.dir, ['clean', '-ffdxq']);
    }
    // Setup runs on this tree: whether its output may be kept rests on a look at it now. A hit
    // runs no setup and keeps nothing, so it does not look.
    if (outcome !== 'restored') await this.setupTrust.beforeSetup();
    return outcome === 'restored';
  }

  /** Only output of setup on the base commit is kept (see SetupTrust). */
  async saveSetup(setup: SetupIdentity): Promise<void> {
    const cache = this.opts.setupCache;
    if (!cache || this.setupOutput.paths.length === 0) return;
    const refusal = await this.setupTrust.refusal();
    if (refusal) return cache.notKept(this.opts.remote, refusal);
    await cache.save(
      this.opts.remote,
      await this.setupOutput.key(this.setupTrust.keyBase(), setup, this.opts.setupInputs ?? [], this.lastCheckpoint),
      this.dir,
      this.setupOutput.paths,
      this.setupOutput.untrackedDirs(),
    );
  }

  async packageStore(): Promise<PackageStoreGrant | undefined> {
    const stores = this.opts.packageStores;
    if (!stores) return undefined;
    await this.guardGitDir();
    // The top level's names as committed: the host reads no file of the tree.
    const names = new Set((await this.git.run(this.dir, ['ls-tree', '-z', '--name-only', 'HEAD'])).split('\0').filter(Boolean));
    const managers = detectPackageManagers(names);
    if (managers.length === 0) return undefined;
    // The repository's kept store only for setup on the base commit, as for the setup cache.
    await this.setupTrust.beforeSetup();
    const trusted = (await this.setupTrust.refusal()) === undefined;
    const claim = await stores.claim(this.opts.remote, this.setupTrust.keyBase(), trusted);
    return { dir: claim.dir, kept: claim.kept, managers, env: packageStoreEnv(managers, claim.dir), release: () => claim.release() };
  }

  private async clean(): Promise<void> {
    await this.git.run(this.dir, ['clean', '-ffdxq', ...this.setupOutput.keep.flatMap((p) => ['-e', p])]);
  }

  async head(): Promise<string> {
    return this.git.run(this.dir, ['rev-parse', 'HEAD']);
  }

  /** The last checkpoint's tree: two verifications of it see the same files (setup's output aside). */
  async treeKey(): Promise<string> {
    await this.guardGitDir();
    return this.git.run(this.dir, ['rev-parse', '--verify', `${this.lastCheckpoint}^{tree}`]);
  }

  async restoreTestFiles(globs: readonly string[]): Promise<string[]> {
    await this.guardGitDir();
    await refuseNestedRepositories(this.dir, [], this.scanMemo);
    // Setup's files are its output, not the task's: a rewrite of one is kept (a checkpoint still refuses it).
    return restoreBaseTestFiles(this.git, this.dir, this.goalBase || this.lastCheckpoint, globs, this.setupOutput.excludes(true));
  }

  /** The commit just made: read from the loose ref git wrote (saves a process per checkpoint). */
  private async committedHead(): Promise<string> {
    const loose = await readFile(join(this.dir, '.git', 'refs', 'heads', ...this.branch.split('/')), 'utf8').catch(() => '');
    return /^[0-9a-f]{40,64}\n?$/.test(loose) ? loose.trim() : this.head();
  }

  /**
   * `parked`: a parked tree (with a fresh `.git`) that still needs its checkout; `fresh`: a clone
   * with nothing in its tree yet; `reused`: this goal's own clone, fetched, as its last run left it.
   */
  private async cloneOrReuse(): Promise<'parked' | 'fresh' | 'reused'> {
    if (existsSync(join(this.dir, '.git')) && existsSync(this.trustedConfigCopy())) {
      await this.restoreTrustedConfig();
    }
    if (this.trustedConfig && (await this.isOurClone())) {
      await this.git.run(this.dir, ['fetch', '--quiet', '--prune', '--no-tags', REMOTE]);
    } else {
      await rm(this.dir, { recursive: true, force: true });
      await mkdir(dirname(this.dir), { recursive: true });
      let parked = false;
      if (this.opts.mirrorCache) parked = await this.cloneFromMirror(this.opts.mirrorCache);
      else if (this.opts.parkCache) parked = await this.cloneIntoParked(this.opts.parkCache);
      else await this.git.run(dirname(this.dir), ['clone', '--quiet', '--no-hardlinks', '--no-tags', '--no-checkout', this.opts.remote, this.dir]);
      this.trustedConfig = await readFile(this.configPath(), 'utf8');
      await writeFile(this.trustedConfigCopy(), this.trustedConfig, { mode: 0o600 });
      return parked ? 'parked' : 'fresh';
    }
    return 'reused';
  }

  /**
   * A local copy of the mirror, then `origin` pointed back at the real remote. --no-hardlinks:
   * the workspace shares no inode with the mirror, so a write in its `.git` cannot reach the
   * mirror, and the workspace outlives the mirror's eviction.
   */
  private async cloneFromMirror(cache: MirrorCache): Promise<boolean> {
    const fresh = freshCloneDir(this.dir);
    await rm(fresh, { recursive: true, force: true });
    const { current, parked, scrubbed } = await cache.withMirror(this.opts.remote, this.git, async (mirror) => {
      // A tree parked by an earlier goal on this remote: its files are mostly the ones to check
      // out. It gets the `.git` of a clone made beside it; its own is never trusted.
      const parkedTree = await mirror.takeParked(this.dir);
      return { current: mirror.current, parked: parkedTree, scrubbed: await this.cloneBeside(mirror.path, parkedTree, fresh) };
    });
    const reused = parked && (await this.adoptParkedTree(fresh, scrubbed));
    await this.git.run(this.dir, ['remote', 'set-url', REMOTE, this.opts.remote]);
    // A mirror fetched just now is the remote's state; an older one is topped up with what is new.
    if (!current) await this.git.run(this.dir, ['fetch', '--quiet', '--prune', '--no-tags', REMOTE]);
    return reused;
  }

  /** A direct clone whose working tree is one parked by an earlier goal on the remote, when there is one. */
  private async cloneIntoParked(cache: MirrorCache): Promise<boolean> {
    const fresh = freshCloneDir(this.dir);
    await rm(fresh, { recursive: true, force: true });
    const took = await cache.warm.take(cache.keyFor(this.opts.remote), this.opts.remote, this.dir);
    const scrubbed = await this.cloneBeside(this.opts.remote, took, fresh);
    return took && (await this.adoptParkedTree(fresh, scrubbed));
  }

  /**
   * Clones `source` into the workspace folder, or beside it (`fresh`) when a parked tree was
   * taken there: that tree is scrubbed meanwhile. True when it was (a failed scrub: the caller
   * falls back to the plain clone).
   */
  private async cloneBeside(source: string, parked: boolean, fresh: string): Promise<boolean> {
    const scrubbed = parked
      ? scrubParkedTree(this.dir).then(
          () => true,
          () => false,
        )
      : Promise.resolve(false);
    try {
      await this.git.run(dirname(this.dir), ['clone', '--quiet', '--no-hardlinks', '--no-tags', '--no-checkout', source, parked ? fresh : this.dir]);
    } finally {
      await scrubbed;
    }
    return scrubbed;
  }

  /** Moves the fresh `.git` into the taken tree once scrubbed; false: it could not, the plain clone is used. */
  private async adoptParkedTree(fresh: string, scrubbed: boolean): Promise<boolean> {
    try {
      if (!scrubbed) throw new Error('the parked tree could not be scrubbed');
      await rename(join(fresh, '.git'), join(this.dir, '.git'));
      await rm(fresh, { recursive: true, force: true });
      return true;
    } catch {
      await rm(this.dir, { recursive: true, force: true });
      await rename(fresh, this.dir);
      return false;
    }
  }

  /**
   * Empties the folder of each submodule (`paths`, the gitlinks of the index); returns them. A
   * fresh checkout leaves a submodule's folder empty; a parked tree may still hold its files.
   */
  private async emptySubmoduleDirs(paths: string[]): Promise<string[]> {
    for (const path of paths) {
      await rm(join(this.dir, path), { recursive: true, force: true });
      await mkdir(join(this.dir, path), { recursive: true });
    }
    return paths;
  }

  private async isOurClone(): Promise<boolean> {
    const url = await this.git.tryRun(this.dir, ['config', '--get', `remote.${REMOTE}.url`]);
    if (url !== this.opts.remote) return false;
    return (await this.git.tryRun(this.dir, ['rev-parse', '--git-dir'])) !== undefined;
  }

  /** The base branch's tip as fetched; `refs`: the remote refs as just read (else git is asked). */
  private async baseCommit(refs?: Map<string, RemoteRef>): Promise<string> {
    const ref = this.opts.baseBranch ? `refs/remotes/${REMOTE}/${this.opts.baseBranch}` : `refs/remotes/${REMOTE}/HEAD`;
    const sha = await this.commitOf(ref, refs);
    if (sha) return sha;
    if (!this.opts.baseBranch) {
      // A remote without HEAD (e.g. a bare repo whose HEAD names a missing branch): take its only branch.
      const heads = refs ? [...refs.values()].map((r) => r.commit) : (await this.git.run(this.dir, ['for-each-ref', '--format=%(objectname)', `refs/remotes/${REMOTE}/`])).split('\n').filter(Boolean);
      if (heads.length === 1 && heads[0]) return heads[0];
    }
    throw new GitError(
      ['rev-parse', ref],
      1,
      this.opts.baseBranch ? `base branch "${this.opts.baseBranch}" not found on ${this.opts.remote}` : `cannot tell the default branch of ${this.opts.remote}; pass a base branch`,
    );
  }

  /** The commit `ref` names (`^{commit}`), from `refs` when it tells; undefined when there is none. */
  private async commitOf(ref: string, refs?: Map<string, RemoteRef>): Promise<string | undefined> {
    if (refs && !refs.has(ref)) return undefined;
    return refs?.get(ref)?.commit ?? (await this.git.tryRun(this.dir, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]));
  }

  /** A resumed goal's base: where its branch left the base branch; no common history: the base's tip, else the goal's. */
  private async resumedBase(tip: string, refs?: Map<string, RemoteRef>): Promise<string> {
    const base = await this.baseCommit(refs).catch(() => undefined);
    return base ? ((await this.git.tryRun(this.dir, ['merge-base', tip, base])) ?? base) : tip;
  }

  /** A clone a run that died left here, taken up to push what it committed; none: the checkpoint cannot be pushed from here. */
  private async adoptClone(sha: string): Promise<void> {
    if (!existsSync(join(this.dir, '.git')) || !existsSync(this.trustedConfigCopy())) {
      throw new PushRejectedError(`no clone here holds checkpoint ${sha.slice(0, 12)}: it cannot be pushed from here`);
    }
    await this.restoreTrustedConfig();
    if (!(await this.isOurClone())) throw new PushRejectedError(`the clone here is not one of ${this.opts.remote}: checkpoint ${sha.slice(0, 12)} cannot be pushed from here`);
  }

  private async fetchBranch(): Promise<string | undefined> {
    const ref = `refs/remotes/${REMOTE}/${this.branch}`;
    try {
      await this.git.run(this.dir, ['fetch', '--quiet', '--no-tags', REMOTE, `+refs/heads/${this.branch}:${ref}`]);
      this.lastFetchAt = Date.now();
    } catch (err) {
      if (err instanceof GitError && /couldn't find remote ref/i.test(err.stderr)) return undefined;
      throw err;
    }
    return this.git.tryRun(this.dir, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  }

  private async readCheckpoints(ref: string): Promise<Checkpoint[]> {
    const log = await this.git.run(this.dir, ['log', `--format=${CHECKPOINT_LOG_FORMAT}`, ref]);
    return parseCheckpointLog(log, this.opts.goalId);
  }

  /**
   * Deletes the workspace (clone, trusted config copy, logs) and lets its mirror be evicted;
   * with a mirror cache, the working tree is parked for the next goal on the remote instead.
   * For a goal at rest (COMPLETE, ESCALATED, STOPPED): the checkpoints are on the remote, and
   * a later run prepares a new workspace. The caller decides when; nothing may use it after.
   */
  async release(): Promise<void> {
    await releaseWorkspace(this.opts);
  }

  /** Kept beside the clone, outside anything a sandboxed command can write. */
  private trustedConfigCopy(): string {
    return trustedConfigCopy(this.dir);
  }

  private configPath(): string {
    return join(this.dir, '.git', 'config');
  }

  private async restoreTrustedConfig(): Promise<void> {
    this.trustedConfig = await readFile(this.trustedConfigCopy(), 'utf8');
    await this.guardGitDir();
  }

  /** Undo anything a task planted in `.git/config` before our git reads it. */
  private async guardGitDir(): Promise<void> {
    if (!this.trustedConfig) return;
    const current = await readFile(this.configPath(), 'utf8').catch(() => '');
    if (current !== this.trustedConfig) await writeFile(this.configPath(), this.trustedConfig, { mode: 0o644 });
  }
}

/** `GitWorkspace.release` for a caller that has the options but no instance. */
export async function releaseWorkspace(opts: Pick<GitWorkspaceOptions, 'dir' | 'remote' | 'mirrorCache' | 'parkCache'>): Promise<void> {
  await rm(trustedConfigCopy(opts.dir), { force: true });
  await rm(`${opts.dir}.logs`, { recursive: true, force: true });
  await rm(freshCloneDir(opts.dir), { recursive: true, force: true });
  // The working tree is parked for the next goal on this remote when the cache keeps one; a
  // local path's go to the same pools, under the same bound (parked trees evicted oldest first).
  const cache = opts.mirrorCache ?? opts.parkCache;
  if (cache && existsSync(opts.dir)) {
    await dropSetupFolders(opts.dir);
    await cache.park(opts.remote, opts.dir).catch(() => false);
  }
  await rm(opts.dir, { recursive: true, force: true });
  if (opts.mirrorCache) await opts.mirrorCache.unpin(opts.remote, opts.dir);
  if (cache) await cache.evict();
}

function trustedConfigCopy(dir: string): string {
  return `${dir}.trusted-gitconfig`;
}

/** Where the `.git` for a parked tree is cloned, beside the workspace (same filesystem). */
function freshCloneDir(dir: string): string {
  return `${dir}.fresh-clone`;
}
