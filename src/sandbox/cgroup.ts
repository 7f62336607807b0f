import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Memory and process-count limits through a cgroup, for every process of one command.
 *
 * The cgroup is created under the bot's own cgroup (so whatever limits the bot itself has still
 * hold), one per command, and removed when the command ends. Works with cgroup v1 (the `memory`
 * and `pids` hierarchies) and v2 (a delegated subtree with the controllers enabled). Where no
 * cgroup is writable (a non-root bot without delegation, most containers) the limit is not
 * enforced and `reason` says why.
 */
export interface CgroupSupport {
  available: boolean;
  version?: 1 | 2;
  /** Why no cgroup can be used (when unavailable). */
  reason?: string;
  /** Directories new cgroups are created in: one per v1 hierarchy, or one for v2. */
  parents: { memory?: string; pids?: string; unified?: string };
}

export interface CgroupLimits {
  memoryBytes: number;
  maxProcesses: number;
}

/** One command's cgroup: the launcher writes its own pid to every `procs` file before it starts bwrap. */
export interface CommandCgroup {
  procsFiles: string[];
  /** Host pids of the processes still in the cgroup. */
  pids(): number[];
  /** How many processes of this cgroup the kernel's OOM killer ended. */
  oomKills(): number;
  remove(): Promise<void>;
}

const PREFIX = 'goal-loop-';
let counter = 0;

export function detectCgroups(root = '/sys/fs/cgroup', procSelf = '/proc/self'): CgroupSupport {
  let membership: string;
  let mountinfo: string;
  try {
    membership = readFileSync(join(procSelf, 'cgroup'), 'utf8');
    mountinfo = readFileSync(join(procSelf, 'mountinfo'), 'utf8');
  } catch (err) {
    return { available: false, reason: `cannot read /proc/self/cgroup: ${(err as Error).message}`, parents: {} };
  }
  const own = parseMembership(membership);
  const mounts = parseCgroupMounts(mountinfo);
  const v1Memory = mounts.find((m) => m.version === 1 && m.controllers.includes('memory'));
  if (v1Memory && own.v1.has('memory')) {
    const parents: CgroupSupport['parents'] = { memory: join(v1Memory.mountPoint, own.v1.get('memory')!) };
    const v1Pids = mounts.find((m) => m.version === 1 && m.controllers.includes('pids'));
    if (v1Pids && own.v1.has('pids')) parents.pids = join(v1Pids.mountPoint, own.v1.get('pids')!);
    return probe({ available: true, version: 1, parents });
  }
  const v2 = mounts.find((m) => m.version === 2);
  if (v2 && own.unified !== undefined) {
    const parent = join(v2.mountPoint, own.unified);
    const controllers = readOr(join(v2.mountPoint, 'cgroup.controllers'), '');
    if (!controllers.split(/\s+/).includes('memory')) {
      return { available: false, reason: `cgroup v2 at ${v2.mountPoint} has no memory controller (a hybrid host puts it in v1)`, parents: {} };
    }
    return probe({ available: true, version: 2, parents: { unified: parent } });
  }
  return { available: false, reason: `no cgroup memory controller is mounted under ${root}`, parents: {} };
}

/** Checks that a child cgroup can really be created (and, for v2, that the controllers can be enabled). */
function probe(support: CgroupSupport): CgroupSupport {
  const dirs = Object.values(support.parents);
  for (const parent of dirs) {
    removeStale(parent);
    const test = join(parent, `${PREFIX}probe-${process.pid}`);
    try {
      mkdirSync(test);
      rmdirSync(test);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return {
        available: false,
        reason: `cannot create a cgroup under ${parent} (${code ?? (err as Error).message}): ${code === 'EROFS' ? 'the cgroup filesystem is read-only (a container?)' : 'no write access (run as root, or delegate a cgroup to the bot)'}`,
        parents: {},
      };
    }
  }
  if (support.version === 2 && support.parents.unified) {
    const parent = support.parents.unified;
    const enabled = readOr(join(parent, 'cgroup.subtree_control'), '').split(/\s+/);
    const missing = ['memory', 'pids'].filter((c) => !enabled.includes(c));
    if (missing.length > 0) {
      try {
        writeFileSync(join(parent, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
      } catch (err) {
        return {
          available: false,
          reason:
            `cgroup v2: cannot enable ${missing.join(', ')} for child cgroups of ${parent} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); ` +
            'run the bot in a delegated cgroup, e.g. `systemd-run --scope -p Delegate=yes goal-loop …`',
          parents: {},
        };
      }
    }
  }
  return support;
}

/** Creates the cgroup of one command with its limits. */
export function createCommandCgroup(support: CgroupSupport, limits: CgroupLimits): CommandCgroup {
  if (!support.available) throw new Error(support.reason ?? 'cgroups unavailable');
  const name = `${PREFIX}${process.pid}-${++counter}`;
  const created: string[] = [];
  try {
    if (support.version === 1) {
      const mem = join(support.parents.memory!, name);
      mkdirSync(mem);
      created.push(mem);
      writeFileSync(join(mem, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // No swap beyond the limit, where swap accounting exists.
      if (existsSync(join(mem, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(mem, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      if (support.parents.pids) {
        const pids = join(support.parents.pids, name);
        mkdirSync(pids);
        created.push(pids);
        writeFileSync(join(pids, 'pids.max'), String(limits.maxProcesses));
      }
    } else {
      const dir = join(support.parents.unified!, name);
      mkdirSync(dir);
      created.push(dir);
      writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      if (existsSync(join(dir, 'pids.max'))) writeFileSync(join(dir, 'pids.max'), String(limits.maxProcesses));
    }
  } catch (err) {
    for (const dir of created.reverse()) tryRmdir(dir);
    throw err;
  }
  const memoryDir = created[0]!;
  return {
    procsFiles: created.map((d) => join(d, 'cgroup.procs')),
    pids: () => readOr(join(memoryDir, 'cgroup.procs'), '').split('\n').filter(Boolean).map(Number),
    oomKills: () => {
      const file = support.version === 1 ? join(memoryDir, 'memory.oom_control') : join(memoryDir, 'memory.events');
      const m = /^oom_kill (\d+)/m.exec(readOr(file, ''));
      return m ? Number(m[1]) : 0;
    },
    remove: async () => {
      for (const dir of created.reverse()) await removeWhenEmpty(dir);
    },
  };
}

/** A cgroup can be removed once its last process is gone; the pid namespace teardown may lag a little. */
async function removeWhenEmpty(dir: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    // Off the main thread: removing a v1 memory cgroup can take milliseconds (its charges move up).
    if (await tryRmdirAsync(dir)) return;
    // v2 only: `cgroup.kill` ends anything still in the cgroup (nothing should be).
    if (i === 0 && existsSync(join(dir, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dir, 'cgroup.kill'), '1');
      } catch {
        /* ignore */
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function tryRmdirAsync(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Removes empty cgroups left by a bot process that died (their name carries its pid). */
function removeStale(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent).filter((n) => n.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^goal-loop-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || existsSync(`/proc/${pid}`)) continue;
    tryRmdir(join(parent, name));
  }
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

interface CgroupMount {
  mountPoint: string;
  version: 1 | 2;
  controllers: string[];
}

function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [fsType, , superOpts] = right.split(' ');
    const mountPoint = fields[4];
    if (!mountPoint) continue;
    if (fsType === 'cgroup2') out.push({ mountPoint: unescapeOctal(mountPoint), version: 2, controllers: [] });
    else if (fsType === 'cgroup') out.push({ mountPoint: unescapeOctal(mountPoint), version: 1, controllers: (superOpts ?? '').split(',') });
  }
  return out;
}

function parseMembership(text: string): { v1: Map<string, string>; unified?: string } {
  const v1 = new Map<string, string>();
  let unified: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[2] === '') unified = m[3];
    else for (const c of m[2]!.split(',')) v1.set(c, m[3]!);
  }
  return unified === undefined ? { v1 } : { v1, unified };
}

function unescapeOctal(s: string): string {
  return s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}
