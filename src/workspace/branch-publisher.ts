import { crashPoint } from '../common/crash-point.js';
import { type PendingPush, PushRejectedError } from '../ports/workspace.js';
import type { Git } from './git.js';

const REMOTE = 'origin';

/**
 * Pushes a goal's checkpoints to its branch, off the critical path: the loop commits, records
 * the push in the outbox, and goes on; this pushes in order, several checkpoints in one push when
 * they queued up meanwhile, each under the lease of the tip the remote must still have.
 * Git commands that write the remote-tracking refs (this push, the workspace's fetches) run one at
 * a time through `exclusive`.
 *
 * Pushes are spaced by `intervalMs` (from the start of one to the start of the next): checkpoints
 * that come quicker go out together. Each push of a goal branch is a `push` and a PR `synchronize`
 * event on the forge, and a CI run where the repository's workflows run on them; and a push is a
 * few processes of CPU here, which the next task's commands would wait for. `hurry` cuts the wait
 * (the loop calls it when it waits for its pushes), and a push that carries no queued checkpoint
 * (a dead run's, pushed by another instance) never waits.
 */
export class BranchPublisher {
  /** Committed and not pushed yet, oldest first. */
  private unpublished: PendingPush[] = [];
  /** Pushed by this instance (carried by a later push too). */
  private readonly published = new Set<string>();
  private lock: Promise<unknown> = Promise.resolve();
  private lastPushAt = Number.NEGATIVE_INFINITY;
  private hurried = false;
  private readonly wakers = new Set<() => void>();

  constructor(
    private readonly git: Git,
    private readonly dir: string,
    private readonly branch: string,
    private readonly intervalMs = 0,
  ) {}

  /** Checkpoints committed and not pushed yet. */
  get pending(): number {
    return this.unpublished.length;
  }

  committed(push: PendingPush): void {
    this.unpublished.push(push);
    this.hurried = false;
  }

  /** The queued checkpoints go now: no spacing until the next one is committed. */
  hurry(): void {
    this.hurried = true;
    for (const wake of this.wakers) wake();
  }

  /** Waits until `intervalMs` after the last push started, unless hurried meanwhile. */
  private async spaced(): Promise<void> {
    const wait = this.lastPushAt + this.intervalMs - Date.now();
    if (wait <= 0 || this.hurried) return;
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, wait);
      this.wakers.add(wake);
    });
  }

  /** The lease of the oldest checkpoint waiting to be pushed (the tip the remote must still have). */
  oldestLease(): string | undefined {
    return this.unpublished[0]?.lease;
  }

  /** The clone was reset to the remote (prepare, resync): nothing of ours waits to be pushed. */
  forget(): void {
    this.unpublished = [];
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /** See Workspace.publish. `ready` runs first, under the lock (the clone's config checked). */
  async publish(p: PendingPush, ready: () => Promise<void>): Promise<void> {
    // Waited out before the lock: a fetch (sync before an attempt) is not held up by the spacing.
    if (this.unpublished.some((u) => u.sha === p.sha)) await this.spaced();
    return this.exclusive(async () => {
      if (this.published.has(p.sha)) return;
      await ready();
      const queued = this.unpublished.some((u) => u.sha === p.sha);
      // What this push carries (a checkpoint committed while it runs is not in it).
      const carried = queued ? this.unpublished.slice() : [];
      const target = queued ? carried.at(-1)!.sha : p.sha;
      const lease = queued ? this.unpublished[0]!.lease : p.lease;
      this.lastPushAt = Date.now();
      try {
        await this.git.run(this.dir, ['push', '--quiet', '--porcelain', `--force-with-lease=refs/heads/${this.branch}:${lease}`, REMOTE, `${target}:refs/heads/${this.branch}`]);
      } catch (err) {
        if ((await this.git.tryRun(this.dir, ['cat-file', '-e', `${target}^{commit}`])) === undefined) {
          throw new PushRejectedError(`checkpoint ${target.slice(0, 12)} is not in this clone: it cannot be pushed from here`);
        }
        const now = await this.remoteTip().catch(() => undefined);
        // At `target`: a try whose answer was lost did it. At the lease, or unknown: try again later.
        if (now !== target) {
          if (now === undefined || now === lease) throw err;
          throw new PushRejectedError(
            `the goal branch ${this.branch} moved on the remote (${now ? `someone else pushed ${now.slice(0, 12)}` : 'someone deleted it'}): checkpoint ${target.slice(0, 12)} was not pushed`,
          );
        }
      }
      crashPoint('checkpoint-pushed');
      if (!queued) {
        this.published.add(target);
        return;
      }
      for (const u of carried) this.published.add(u.sha);
      this.unpublished = this.unpublished.slice(carried.length);
    });
  }

  /** The goal branch's tip on the remote now ('' when it has none). */
  private async remoteTip(): Promise<string> {
    const out = await this.git.run(this.dir, ['ls-remote', '--refs', REMOTE, `refs/heads/${this.branch}`]);
    return out.split('\t')[0]?.trim() ?? '';
  }
}
