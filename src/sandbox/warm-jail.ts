import { closeSync, lstatSync, statSync, write, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { CommandCgroup } from './cgroup.js';
import type { CapturedChild } from './run-captured.js';

/**
 * A jail started ahead of its command (see GATE in bwrap-args.ts): bwrap, the privileged step
 * and the dropped capabilities are done, and the gate waits on `input` for the command.
 *
 * Security: while it waits, the only process in it besides bwrap's own is the gate (no code from
 * the repository, the task or the model has run in it), so the bot's own git may work in the
 * workspace meanwhile. Untrusted code starts only once the request is written ("go"), after the
 * workspace is handed over again and found to be the very directory the jail bound; and, as for
 * a cold jail, every jailed process is gone before `run()` returns. Waiting jails share the jail
 * uid with the running command: their few processes count toward its RLIMIT_NPROC, and the uid
 * scan of awaitGone leaves them out by descent from their launchers (a command's process can
 * never descend from another jail's launcher: it cannot leave its own pid namespace).
 */
export interface WarmJail {
  /** What a request must match to use it: workspace, uid, resource limits, passed variables. */
  key: string;
  /** Real path of the workspace, and the directory (and `.git`) the jail bound. */
  workspace: string;
  tree: TreeIdentity;
  uid: number;
  gid: number;
  child: CapturedChild;
  /** Write end of the gate's stdin. */
  input: number;
  cgroup: CommandCgroup | undefined;
  /** After the command: waits for every jailed process to be gone, removes the cgroup. */
  close(): Promise<void>;
}

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

/** Writes the request to the gate and closes its stdin; a gate gone meanwhile (EPIPE) shows as a jail that did not start. */
export function sendRequest(fd: number, request: Buffer): void {
  // An empty pipe takes PIPE_BUF bytes without blocking; more goes through the thread pool.
  if (request.length <= 4096) {
    try {
      writeSync(fd, request);
    } catch {
      /* the gate is gone: the run reports no start marker */
    }
    closeSync(fd);
  } else {
    write(fd, request, () => closeSync(fd));
  }
}

/**
 * Launcher pids of the warm jails that wait, of every sandbox in this process: their processes
 * are no command's (see awaitGone), whichever sandbox started them.
 */
const roots = new Set<number>();

interface Waiting {
  ready: Promise<WarmJail | undefined>;
  idle?: NodeJS.Timeout;
}

/**
 * Up to `depth` warm jails per workspace, waiting beside the command that runs there (the uid
 * scan of awaitGone leaves their processes out by their launchers, `roots`): the next command's
 * jail then has had the whole previous command, and more, to start. Unused ones are discarded
 * after `idleMs`, on `dispose`, and die with the bot (bwrap's --die-with-parent; the gate also
 * ends when its stdin closes).
 */
export class WarmJails {
  private readonly waiting = new Map<string, Waiting[]>();
  private disposed = false;
  readonly stats = { warmStarts: 0, warmHits: 0, warmDiscards: 0 };

  constructor(private readonly opts: { idleMs: number; depth: number; logger?: Logger | undefined }) {}

  /**
   * A warm jail's launcher, just spawned: until it is taken or exits, its processes belong to
   * no command. Released on exit (synchronously, in the same callback as the reaping: the pid
   * cannot have been reused by then).
   */
  hold(child: CapturedChild): void {
    const pid = child.child.pid;
    if (pid === undefined || child.ended) return;
    roots.add(pid);
    child.child.once('exit', () => roots.delete(pid));
  }

  /** Launcher pids of the waiting warm jails. */
  waitingRoots(): ReadonlySet<number> {
    return roots;
  }

  /** Starts warm jails for `workspace` in the background, up to the depth. */
  prewarm(workspace: string, open: () => Promise<WarmJail>): void {
    while (true) {
      const list = this.waiting.get(workspace) ?? [];
      if (this.disposed || list.length >= this.opts.depth) return;
      const entry: Waiting = { ready: Promise.resolve(undefined) };
      list.push(entry);
      this.waiting.set(workspace, list);
      this.stats.warmStarts++;
      entry.ready = open().then(
        (jail) => {
          if (this.waiting.get(workspace)?.includes(entry)) {
            entry.idle = setTimeout(() => void this.discard(workspace, entry), this.opts.idleMs);
            entry.idle.unref();
          }
          return jail;
        },
        (err: unknown) => {
          this.opts.logger?.debug({ err, workspace }, 'cannot start a warm jail');
          this.forget(workspace, entry);
          return undefined;
        },
      );
    }
  }

  /**
   * The oldest warm jail of `workspace` if it matches `key`, is alive and bound what the
   * workspace is now; else every waiting one there is discarded (the others were made alike).
   */
  async take(workspace: string, key: string): Promise<WarmJail | undefined> {
    const entry = this.waiting.get(workspace)?.[0];
    if (!entry) return undefined;
    this.forget(workspace, entry);
    clearTimeout(entry.idle);
    const jail = await entry.ready;
    const now = treeIdentity(workspace);
    if (!jail || jail.key !== key || jail.child.ended || now?.workspace !== jail.tree.workspace || now.git !== jail.tree.git) {
      await Promise.all([jail ? this.end(jail) : undefined, this.discard(workspace)]);
      return undefined;
    }
    // From go on its processes are the command's: every scan counts them again.
    if (jail.child.child.pid !== undefined) roots.delete(jail.child.child.pid);
    return jail;
  }

  /** Kills the warm jails of `workspace` (or only `entry`), e.g. before another jail of its uid runs there. */
  async discard(workspace: string, only?: Waiting): Promise<void> {
    const list = this.waiting.get(workspace) ?? [];
    const gone = only ? list.filter((e) => e === only) : list;
    for (const entry of gone) {
      this.forget(workspace, entry);
      clearTimeout(entry.idle);
    }
    await Promise.all(
      gone.map(async (entry) => {
        const jail = await entry.ready;
        if (jail) await this.end(jail);
      }),
    );
  }

  async discardAll(): Promise<void> {
    await Promise.all([...this.waiting.keys()].map((w) => this.discard(w)));
  }

  private forget(workspace: string, entry: Waiting): void {
    const list = this.waiting.get(workspace)?.filter((e) => e !== entry) ?? [];
    if (list.length > 0) this.waiting.set(workspace, list);
    else this.waiting.delete(workspace);
  }

  /** No warm jail from now on; the waiting ones are killed. */
  async dispose(): Promise<void> {
    this.disposed = true;
    await this.discardAll();
  }

  /** A warm jail that will not run: its process group killed, its stdin closed, the cgroup removed. */
  async end(jail: WarmJail): Promise<void> {
    this.stats.warmDiscards++;
    await jail.child.discard();
    if (jail.child.child.pid !== undefined) roots.delete(jail.child.child.pid);
    closeSync(jail.input);
    await jail.close();
  }
}
