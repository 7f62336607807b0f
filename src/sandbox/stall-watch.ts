import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Entries the workspace walk looks at per check: bounded, however big the tree (node_modules). */
const WALK_BUDGET = 2000;
/** CPU the command's processes must use in a check's interval to count as working: 5% of one core. */
const CPU_SHARE = 0.05;
/** Kernel clock ticks per second (`getconf CLK_TCK`: 100 on every Linux the bot runs on). */
const TICKS_PER_SECOND = 100;
/**
 * Bytes the command's processes must read or write (files anywhere, sockets, pipes) in a check's
 * interval to count as working: a download into a store outside the workspace uses little CPU.
 * A silent retry loop (a TLS handshake every few seconds) moves far less.
 */
const IO_BYTES = 64 * 1024;

/**
 * Tells when a command has stalled: for `stallMs`, no output byte arrived, no file in its
 * workspace changed, and its processes used no CPU (less than 5% of one core) and moved no data
 * (less than 64 KiB read or written per check). A network retry loop that prints nothing (a
 * package manager behind a proxy it cannot pass) is all of these.
 *
 * Each check is cheap and bounded, and done only as far as needed: output first, then the CPU
 * time and I/O of the process tree (from /proc: the processes of the command's group and their
 * descendants, which takes in a jail's pid namespace; a process started or gone counts as
 * activity), then a walk of at most 2,000 workspace entries (breadth first, `.git` left out) for
 * its newest mtime, entry count and size.
 */
export class StallWatch {
  private lastActivity: number;
  private cpu: TreeUsage | undefined;
  private tree: string | undefined;
  private lastCheck: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: { pid: number; workspace: string; stallMs: number; onStall: () => void; clock?: () => number }) {
    this.lastActivity = this.now();
    this.lastCheck = this.lastActivity;
    this.cpu = treeUsage(opts.pid);
    this.tree = workspaceSignature(opts.workspace);
    const every = Math.min(2000, Math.max(200, Math.floor(opts.stallMs / 5)));
    this.timer = setInterval(() => this.check(), every);
    this.timer.unref();
  }

  /** Output arrived: the command is alive. */
  output(): void {
    this.lastActivity = this.now();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(): void {
    const now = this.now();
    const interval = now - this.lastCheck;
    this.lastCheck = now;
    if (now - this.lastActivity < interval) return; // output in this interval
    const cpu = treeUsage(this.opts.pid);
    const used = cpu && this.cpu ? Math.abs(cpu.ticks - this.cpu.ticks) : 0;
    const moved = cpu && this.cpu ? Math.abs(cpu.ioBytes - this.cpu.ioBytes) : 0;
    const changed = cpu?.pids !== this.cpu?.pids;
    this.cpu = cpu;
    if (changed || used >= Math.max(1, (interval / 1000) * TICKS_PER_SECOND * CPU_SHARE) || moved >= IO_BYTES) {
      this.lastActivity = now;
      return;
    }
    const tree = workspaceSignature(this.opts.workspace);
    if (tree !== this.tree) {
      this.tree = tree;
      this.lastActivity = now;
      return;
    }
    if (now - this.lastActivity >= this.opts.stallMs) {
      this.stop();
      this.opts.onStall();
    }
  }

  private now(): number {
    return (this.opts.clock ?? Date.now)();
  }
}

interface ProcStat {
  ppid: number;
  pgrp: number;
  /** utime + stime + cutime + cstime: a child reaped within the tree moves its time to its parent. */
  ticks: number;
}

export interface TreeUsage {
  /** CPU clock ticks, user and system, of the live processes and the children they reaped. */
  ticks: number;
  /** Bytes read and written (rchar + wchar) by the live processes, where /proc lets us read it. */
  ioBytes: number;
  /** Which pids they are. */
  pids: string;
}

/** What the group led by `leader` and every descendant used so far, and which pids they are. */
export function treeUsage(leader: number): TreeUsage | undefined {
  const all = new Map<number, ProcStat>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(name);
    if (stat) all.set(Number(name), stat);
  }
  const inTree = new Set<number>();
  for (const [pid, s] of all) if (pid === leader || s.pgrp === leader) inTree.add(pid);
  // Descendants: repeat until no new one (a deep tree takes a few rounds; bounded by its depth).
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, s] of all) {
      if (!inTree.has(pid) && inTree.has(s.ppid)) {
        inTree.add(pid);
        grew = true;
      }
    }
  }
  let ticks = 0;
  let ioBytes = 0;
  for (const pid of inTree) {
    ticks += all.get(pid)!.ticks;
    ioBytes += readIo(pid);
  }
  return { ticks, ioBytes, pids: [...inTree].sort((a, b) => a - b).join(',') };
}

/** rchar + wchar of one process; 0 when it is gone or not ours to read. */
function readIo(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'latin1');
    return Number(/^rchar: (\d+)$/m.exec(text)?.[1] ?? 0) + Number(/^wchar: (\d+)$/m.exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function readStat(pid: string): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined; // gone meanwhile
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after the last `)`.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(f[i] ?? 0);
  return { ppid: n(1), pgrp: n(2), ticks: n(11) + n(12) + n(13) + n(14) };
}

/** The newest mtime, entry count and total size of the first WALK_BUDGET entries, breadth first. */
export function workspaceSignature(root: string, budget = WALK_BUDGET): string {
  let newest = 0;
  let count = 0;
  let size = 0;
  const queue = [root];
  for (let i = 0; i < queue.length && count < budget; i++) {
    const dir = queue[i]!;
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      if (count >= budget) break;
      if (dir === root && name === '.git') continue;
      const path = join(dir, name);
      try {
        const st = lstatSync(path);
        count++;
        newest = Math.max(newest, st.mtimeMs);
        if (st.isDirectory()) queue.push(path);
        else size += st.size;
      } catch {
        /* removed meanwhile: the count says so */
      }
    }
  }
  try {
    newest = Math.max(newest, lstatSync(root).mtimeMs);
  } catch {
    /* the workspace itself is gone */
  }
  return `${newest}:${count}:${size}`;
}
