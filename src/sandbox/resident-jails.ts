import type { Logger } from 'pino';
import type { ResidentJail } from './resident-jail.js';
import { sameTree, treeIdentity } from './tree-identity.js';

/**
 * Launcher pids of the resident jails that wait between commands, of every sandbox in this
 * process: their processes (bwrap, the server, the next command's cell before its request) are
 * no command's, so the uid scan of awaitGone leaves them out by their descent.
 */
const roots = new Set<number>();
const hooked = new WeakSet<ResidentJail>();

interface Entry {
  ready: Promise<ResidentJail | undefined>;
  idle?: NodeJS.Timeout;
}

/**
 * One resident jail per workspace, waiting between its commands. `take` hands it to one command
 * (it leaves the pool meanwhile), `giveBack` returns it. Unused ones end after `idleMs`, on
 * `dispose`, and die with the bot (bwrap's --die-with-parent; the server also ends when its
 * stdin closes).
 */
export class ResidentJails {
  private readonly waiting = new Map<string, Entry>();
  private disposed = false;
  readonly stats = { warmStarts: 0, warmHits: 0, warmDiscards: 0 };

  constructor(private readonly opts: { idleMs: number; logger?: Logger | undefined }) {}

  /** Launcher pids of the waiting resident jails. */
  waitingRoots(): ReadonlySet<number> {
    return roots;
  }

  get closed(): boolean {
    return this.disposed;
  }

  /** Counts a jail started; undefined when the pool is disposed (the caller runs cold). */
  started(): boolean {
    if (this.disposed) return false;
    this.stats.warmStarts++;
    return true;
  }

  /** Starts a resident jail for `workspace` in the background, unless one is there. */
  prewarm(workspace: string, open: () => Promise<ResidentJail>): void {
    if (this.disposed || this.waiting.has(workspace)) return;
    this.stats.warmStarts++;
    const entry: Entry = { ready: Promise.resolve(undefined) };
    this.waiting.set(workspace, entry);
    entry.ready = open().then(
      (jail) => {
        if (this.waiting.get(workspace) === entry) this.park(workspace, entry, jail);
        return jail;
      },
      (err: unknown) => {
        this.opts.logger?.debug({ err, workspace }, 'cannot start a resident jail');
        if (this.waiting.get(workspace) === entry) this.waiting.delete(workspace);
        return undefined;
      },
    );
  }

  /**
   * The waiting jail of `workspace` if it matches `key`, is alive and bound what the workspace is
   * now; else it is ended. From here until `giveBack` its processes are the command's.
   */
  async take(workspace: string, key: string): Promise<ResidentJail | undefined> {
    const entry = this.waiting.get(workspace);
    if (!entry) return undefined;
    this.waiting.delete(workspace);
    clearTimeout(entry.idle);
    const jail = await entry.ready;
    if (!jail) return undefined;
    if (jail.pid !== undefined) roots.delete(jail.pid);
    if (jail.parts.key !== key || !jail.alive || !sameTree(treeIdentity(workspace), jail.parts.tree)) {
      await this.end(jail);
      return undefined;
    }
    jail.ref();
    return jail;
  }

  /** A jail whose command ended: back in the pool when it is alive and the pool has room, else ended. */
  async giveBack(jail: ResidentJail): Promise<void> {
    const workspace = jail.parts.workspace;
    if (this.disposed || !jail.alive || this.waiting.has(workspace)) {
      await this.end(jail);
      return;
    }
    const entry: Entry = { ready: Promise.resolve(jail) };
    this.waiting.set(workspace, entry);
    this.park(workspace, entry, jail);
  }

  private park(workspace: string, entry: Entry, jail: ResidentJail): void {
    const pid = jail.pid;
    if (pid !== undefined && jail.alive) {
      roots.add(pid);
      // Released on exit, in the callback that reaps it: the pid cannot have been reused by then.
      if (!hooked.has(jail)) {
        hooked.add(jail);
        jail.parts.launcher.once('exit', () => roots.delete(pid));
      }
    }
    jail.unref();
    entry.idle = setTimeout(() => void this.discard(workspace), this.opts.idleMs);
    entry.idle.unref();
  }

  /** Ends the waiting jail of `workspace`, e.g. before another jail of its uid runs there. */
  async discard(workspace: string): Promise<void> {
    const entry = this.waiting.get(workspace);
    if (!entry) return;
    this.waiting.delete(workspace);
    clearTimeout(entry.idle);
    const jail = await entry.ready;
    if (jail) await this.end(jail);
  }

  async discardAll(): Promise<void> {
    await Promise.all([...this.waiting.keys()].map((w) => this.discard(w)));
  }

  /** No resident jail from now on; the waiting ones are ended. */
  async dispose(): Promise<void> {
    this.disposed = true;
    await this.discardAll();
  }

  /** A jail that will not run again: killed, its cgroup and channel removed. */
  async end(jail: ResidentJail): Promise<void> {
    this.stats.warmDiscards++;
    if (jail.pid !== undefined) roots.delete(jail.pid);
    await jail.end();
  }
}
