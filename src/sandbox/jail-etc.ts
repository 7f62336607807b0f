import { existsSync, realpathSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { JAIL_HOME, realOrUndefined } from './jail-host.js';
import { scratchPath } from './scratch.js';

/** The generated files of the jail's /etc (and the empty file bound over masked paths), by name. */
function generated(uid: number, gid: number): Record<string, string> {
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\ngoal-loop:x:${uid}:${gid}:goal-loop jail:${JAIL_HOME}:/bin/bash\n`,
    group: `root:x:0:\nnogroup:x:65534:\ngoal-loop:x:${gid}:\n`,
    hosts: '127.0.0.1\tlocalhost goal-loop-jail\n::1\tlocalhost ip6-localhost ip6-loopback\n',
    // The workspace's .git belongs to the bot: let the jail's own git read it.
    gitconfig: '[safe]\n\tdirectory = *\n',
    empty: '',
  };
}

interface Kept {
  dir: string;
  /** Jails opened with these files and not yet closed. */
  users: number;
  /** Replaced or evicted: removed once its last jail is closed. */
  stale: boolean;
}

/** What one jail binds from the host's /etc side: files for bwrap to place, and the empty file for masks. */
export interface EtcFiles {
  files: Array<{ src: string; dest: string }>;
  emptyFile: string;
  /** Call when the jail is gone. */
  release: () => Promise<void>;
}

/**
 * The generated /etc files of the jail uids, kept in this process's scratch directory and
 * reused by the next command of the same uid (they depend on the uid and gid only): writing
 * and removing them cost more than the rest of a jail's preparation.
 * Written once, never changed, readable by all and writable by the bot only; the jail binds
 * them read-only and cannot reach the scratch directory. Each use checks they are still there
 * (a temp cleaner may remove them), and at most `max` sets are kept, the least recently used
 * set not in use removed first.
 */
export class JailEtc {
  private readonly kept = new Map<string, Kept>();

  constructor(private readonly max = 32) {}

  async acquire(uid: number, gid: number, network: boolean, passEnv: Record<string, string> = {}): Promise<EtcFiles> {
    const key = `${uid}:${gid}`;
    let entry = this.kept.get(key);
    if (entry && !Object.keys(generated(uid, gid)).every((name) => existsSync(join(entry!.dir, name)))) {
      await this.drop(key, entry);
      entry = undefined;
    }
    if (entry) {
      // Most recently used last.
      this.kept.delete(key);
      this.kept.set(key, entry);
      entry.users++;
    } else {
      const dir = scratchPath('etc');
      // Readable so that bwrap can bind them as any uid.
      await mkdir(dir, { mode: 0o755 });
      try {
        await Promise.all(Object.entries(generated(uid, gid)).map(([name, content]) => writeFile(join(dir, name), content, { mode: 0o644, flag: 'wx' })));
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
      entry = { dir, users: 1, stale: false };
      const old = this.kept.get(key); // a concurrent acquire made one meanwhile
      if (old) await this.drop(key, old);
      this.kept.set(key, entry);
      await this.evict();
    }
    const held = entry;
    let released = false;
    const files: Array<{ src: string; dest: string }> = [];
    for (const name of ['passwd', 'group', 'hosts', 'gitconfig']) {
      if (network && name === 'hosts' && existsSync('/etc/hosts')) continue;
      files.push({ src: join(held.dir, name), dest: `/etc/${name}` });
    }
    for (const dest of [...HOST_ETC, ...(network ? NETWORK_ETC : [])]) {
      const src = realOrUndefined(dest);
      if (src) files.push({ src, dest });
    }
    files.push(...caBundles(passEnv));
    return {
      files,
      emptyFile: join(held.dir, 'empty'),
      release: async () => {
        if (released) return;
        released = true;
        held.users--;
        if (held.stale && held.users === 0) await rm(held.dir, { recursive: true, force: true });
      },
    };
  }

  /** Forgets a set; removed now when no jail uses it, else when its last jail is closed. */
  private async drop(key: string, entry: Kept): Promise<void> {
    if (this.kept.get(key) === entry) this.kept.delete(key);
    entry.stale = true;
    if (entry.users === 0) await rm(entry.dir, { recursive: true, force: true });
  }

  /** The least recently used sets no jail uses, past the bound. */
  private async evict(): Promise<void> {
    const unused = [...this.kept].filter(([, e]) => e.users === 0);
    await Promise.all(unused.slice(0, Math.max(0, this.kept.size - this.max)).map(([key, e]) => this.drop(key, e)));
  }
}

/** Host files the jail may read: dynamic linker, time zone, CA certificates, alternatives. No secrets. */
const HOST_ETC = ['/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime', '/etc/nsswitch.conf', '/etc/alternatives', '/etc/ssl/certs', '/etc/ca-certificates', '/etc/os-release'];
/** Only for commands given the network (the setup step). */
const NETWORK_ETC = ['/etc/resolv.conf', '/etc/hosts', '/etc/gai.conf'];

/** Variables that name a CA bundle: a file the operator trusts, bound read-only where it names it. */
const CA_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'];

/** The CA bundles the passed variables name: absolute paths to regular files on the host (resolved), bound at the named path. */
function caBundles(passEnv: Record<string, string>): Array<{ src: string; dest: string }> {
  const out: Array<{ src: string; dest: string }> = [];
  for (const name of CA_VARIABLES) {
    const path = passEnv[name];
    if (!path || !isAbsolute(path) || path.split('/').includes('..')) continue;
    try {
      const real = realpathSync(path);
      if (statSync(real).isFile()) out.push({ src: real, dest: path });
    } catch {
      // Not there: the command will say so.
    }
  }
  return out;
}
