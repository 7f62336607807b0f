import { closeSync, constants, fstatSync, openSync, realpathSync, statSync } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, readlink, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** A file-tool request the workspace confinement refuses (the agent sees the message). */
export class ConfinementError extends Error {
  override name = 'ConfinementError';
}

export interface ConfinedFilesOptions {
  /** Largest file `read` returns (default 1 MiB). */
  maxReadBytes?: number;
  /** Largest content `write` accepts (default 1 MiB). */
  maxWriteBytes?: number;
  /** Most entries `list` returns (default 2,000). */
  maxListEntries?: number;
}

export interface DirEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
}

const MAX_PATH = 4096;
/** Symlinks followed in one request, as the kernel's own limit. */
const MAX_HOPS = 40;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** `name` inside the directory open as `fd`: the magic link pins that directory, whatever its path now names. */
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

/** A symlink met on the way: its target, or null when it changed under us (walk again). */
class Hop {
  constructor(readonly target: string | null) {}
}

/** What a walk does with its last component, in the directory open as `dir` (physical path `parents`). */
type Final<T> = (dir: number, name: string, parents: string[], viaLink: boolean) => Promise<T | Hop>;

/**
 * The agent's file tools, confined to the workspace. Paths are workspace-relative; every
 * request is refused, with a message the model can act on, when it:
 * - is absolute, empty, contains `..` or a NUL byte;
 * - names `.git` (any case) or anything under it, directly or through a symlink;
 * - resolves (following symlinks) outside the workspace;
 * - reads a file larger than the cap or writes content larger than the cap;
 * - reads or writes something that is not a regular file, or a file with other hard links.
 *
 * A jailed process may swap any directory for a symlink at any moment, so no path is checked
 * and then opened: each request walks from the workspace root one component at a time, holding
 * the directory it reached open and opening the next name relative to it (through
 * /proc/self/fd, as Node has no openat) with O_NOFOLLOW. A symlink met on the way is read, its
 * target resolved against the physical directories walked so far (outside or `.git` refused),
 * and the walk starts again from the root. The kernel never follows a link for us. (Doing the
 * file operations inside the jail instead would cost a jail start per call.)
 */
export class ConfinedFiles {
  readonly root: string;
  private readonly maxRead: number;
  private readonly maxWrite: number;
  private readonly maxList: number;

  constructor(root: string, opts: ConfinedFilesOptions = {}) {
    this.root = realpathSync(root);
    this.maxRead = opts.maxReadBytes ?? 1024 * 1024;
    this.maxWrite = opts.maxWriteBytes ?? 1024 * 1024;
    this.maxList = opts.maxListEntries ?? 2000;
    checkProcFd(this.root);
  }

  /** The file's text (UTF-8). */
  async read(path: string): Promise<string> {
    const rel = this.checkSyntax(path);
    if (rel.length === 0) throw new ConfinementError(`${path}: names the workspace itself, not a file`);
    return this.walk(path, rel, false, async (dir, name) => {
      const handle = await this.openFinal(path, dir, name, constants.O_RDONLY);
      if (handle instanceof Hop) return handle;
      try {
        const st = await this.checkRegular(path, handle);
        if (st.size > this.maxRead) throw new ConfinementError(`${path}: ${st.size} bytes, more than the ${this.maxRead}-byte read limit`);
        const buf = Buffer.alloc(st.size);
        const { bytesRead } = await handle.read(buf, 0, st.size, 0);
        return buf.subarray(0, bytesRead).toString('utf8');
      } finally {
        await handle.close();
      }
    });
  }

  /** Creates or replaces the file (and its missing parent directories). */
  async write(path: string, content: string): Promise<void> {
    const bytes = Buffer.from(content, 'utf8');
    if (bytes.length > this.maxWrite) throw new ConfinementError(`${path}: ${bytes.length} bytes, more than the ${this.maxWrite}-byte write limit`);
    const rel = this.checkSyntax(path);
    if (rel.length === 0) throw new ConfinementError(`${path}: names the workspace itself, not a file`);
    await this.walk(path, rel, true, async (dir, name, _parents, viaLink) => {
      // Through a symlink only an existing target is written, as before.
      const handle = await this.openFinal(path, dir, name, constants.O_WRONLY | (viaLink ? 0 : constants.O_CREAT), viaLink);
      if (handle instanceof Hop) return handle;
      try {
        await this.checkRegular(path, handle);
        await handle.truncate(0);
        await handle.write(bytes, 0, bytes.length, 0);
      } finally {
        await handle.close();
      }
    });
  }

  /** The entries of a directory (never `.git`), sorted by name. */
  async list(path = '.'): Promise<{ entries: DirEntry[]; truncated: boolean }> {
    const rel = this.checkSyntax(path);
    const dirents = await this.walk(path, rel, false, async (dir, name) => {
      const handle = await this.openDir(path, dir, name, false);
      if (handle instanceof Hop) return handle;
      try {
        return await readdir(`/proc/self/fd/${handle.fd}`, { withFileTypes: true });
      } finally {
        await handle.close();
      }
    });
    const kept = dirents.filter((d) => !isGitName(d.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
    const entries = kept.slice(0, this.maxList).map((d) => ({
      name: d.name,
      type: d.isSymbolicLink() ? ('symlink' as const) : d.isDirectory() ? ('dir' as const) : d.isFile() ? ('file' as const) : ('other' as const),
    }));
    return { entries, truncated: kept.length > entries.length };
  }

  /** Removes a file, a symlink (never its target) or an empty directory. */
  async remove(path: string): Promise<void> {
    const rel = this.checkSyntax(path);
    if (rel.length === 0) throw new ConfinementError(`${path}: cannot remove the workspace itself`);
    // The parents are walked (links followed); the last name is removed as it is, never followed.
    await this.walk(path, rel, false, async (dir, name) => {
      const target = at(dir, name);
      const st = await lstat(target).catch((err: NodeJS.ErrnoException) => {
        throw this.fsError(path, err);
      });
      await (st.isDirectory() ? rmdir(target) : unlink(target)).catch((err: NodeJS.ErrnoException) => {
        throw this.fsError(path, err);
      });
    });
  }

  /**
   * The real host path of an existing workspace path, after checking it stays inside the
   * workspace and out of `.git`. Exposed for tools that hand a path to another program: that
   * program opens it by path again, so this is a check at one moment, not a confinement.
   */
  async resolveExisting(path: string, allowRoot = false): Promise<string> {
    const rel = this.checkSyntax(path);
    if (rel.length === 0 && !allowRoot) throw new ConfinementError(`${path}: names the workspace itself, not a file`);
    return this.walk(path, rel, false, async (dir, name, parents) => {
      const st = await lstat(at(dir, name)).catch((err: NodeJS.ErrnoException) => {
        throw this.fsError(path, err);
      });
      if (st.isSymbolicLink()) return this.linkAt(dir, name);
      return name === '.' ? join(this.root, ...parents) : join(this.root, ...parents, name);
    });
  }

  /**
   * Walks `rel` from the root: every component but the last is opened as a directory relative
   * to the previous one (created when `create`), then `final` runs on the last. A symlink
   * anywhere (reported by `final` for the last name) restarts the walk on its resolved target.
   */
  private async walk<T>(path: string, rel: string, create: boolean, final: Final<T>): Promise<T> {
    const root = await open(this.root, DIR_FLAGS).catch((err: NodeJS.ErrnoException) => {
      throw this.fsError(path, err);
    });
    try {
      let pending = rel.length > 0 ? rel.split('/') : [];
      let viaLink = false;
      for (let hops = 0; hops <= MAX_HOPS; hops++) {
        const step = await this.descend(path, root.fd, pending, create && !viaLink, viaLink, final);
        if (!('hop' in step)) return step.value;
        const { hop, parents, rest } = step;
        if (hop.target === null) continue;
        if (rest.length === 0) viaLink = true;
        pending = this.follow(path, parents, hop.target).concat(rest);
      }
      throw new ConfinementError(`${path}: too many levels of symlinks`);
    } finally {
      await root.close();
    }
  }

  /** One pass of a walk; a link comes back with the physical directory holding it and what follows it. */
  private async descend<T>(
    path: string,
    rootFd: number,
    pending: string[],
    create: boolean,
    viaLink: boolean,
    final: Final<T>,
  ): Promise<{ value: T } | { hop: Hop; parents: string[]; rest: string[] }> {
    const parents: string[] = [];
    let dir: FileHandle | undefined;
    try {
      for (let i = 0; i < pending.length - 1; i++) {
        const name = pending[i]!;
        const next = await this.openDir(path, dir?.fd ?? rootFd, name, create, [...parents, name].join('/'));
        if (next instanceof Hop) return { hop: next, parents: [...parents], rest: pending.slice(i + 1) };
        await dir?.close();
        dir = next;
        parents.push(name);
      }
      // A link to the workspace root leaves nothing to walk: its last name is `.`.
      const last = pending.at(-1) ?? '.';
      if (isGitName(last)) throw new ConfinementError(`${path}: resolves into .git, which is off limits`);
      const result = await final(dir?.fd ?? rootFd, last, parents, viaLink);
      return result instanceof Hop ? { hop: result, parents, rest: [] } : { value: result };
    } finally {
      await dir?.close();
    }
  }

  /**
   * Opens `name` under `dir` as a directory, never through a symlink (a link comes back as a
   * Hop). `parent`: the physical path, when it is a parent of what the request names.
   */
  private async openDir(path: string, dir: number, name: string, create: boolean, parent?: string): Promise<FileHandle | Hop> {
    if (isGitName(name)) throw new ConfinementError(`${path}: resolves into .git, which is off limits`);
    for (let tries = 0; ; tries++) {
      try {
        return await open(at(dir, name), DIR_FLAGS);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (err.code === 'ENOENT' && create && tries < 3) {
          // mkdir never follows a symlink at its last name (EEXIST): the open above decides.
          await mkdir(at(dir, name)).catch((m: NodeJS.ErrnoException) => {
            if (m.code !== 'EEXIST') throw this.fsError(path, m);
          });
          continue;
        }
        if (err.code === 'ENOTDIR' || err.code === 'ELOOP') {
          // O_DIRECTORY|O_NOFOLLOW fails alike on a symlink and on a file: readlink tells them apart.
          const hop = await this.linkAt(dir, name);
          if (hop.target !== null) return hop;
          throw new ConfinementError(parent ? `${path}: ${parent} is not a directory` : `${path}: not a directory`);
        }
        throw this.fsError(path, err);
      }
    }
  }

  /** Opens the last name without following it (a link comes back as a Hop). */
  private async openFinal(path: string, dir: number, name: string, flags: number, viaLink = false): Promise<FileHandle | Hop> {
    try {
      return await open(at(dir, name), flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ELOOP') return this.linkAt(dir, name);
      if (err.code === 'ENOENT' && viaLink) throw new ConfinementError(`${path}: a symlink whose target does not exist`);
      throw this.fsError(path, err);
    }
  }

  /** The target of the symlink `name`, or a Hop(null) when it is not (or no longer) one. */
  private async linkAt(dir: number, name: string): Promise<Hop> {
    return new Hop(await readlink(at(dir, name)).catch(() => null));
  }

  /** Components of a link's target, resolved against the physical directories walked so far. */
  private follow(path: string, parents: string[], target: string): string[] {
    let base = parents;
    let rest = target;
    if (target.startsWith('/')) {
      if (target !== this.root && !target.startsWith(`${this.root}/`)) throw new ConfinementError(`${path}: resolves outside the workspace`);
      base = [];
      rest = target.slice(this.root.length);
    }
    const out = [...base];
    for (const part of rest.split('/')) {
      if (part === '' || part === '.') continue;
      if (part !== '..') out.push(part);
      else if (out.pop() === undefined) throw new ConfinementError(`${path}: resolves outside the workspace`);
    }
    if (out.some(isGitName)) throw new ConfinementError(`${path}: resolves into .git, which is off limits`);
    return out;
  }

  private async checkRegular(path: string, handle: FileHandle) {
    const st = await handle.stat();
    if (!st.isFile()) throw new ConfinementError(`${path}: not a regular file`);
    if (st.nlink > 1) throw new ConfinementError(`${path}: refused, the file has other hard links`);
    return st;
  }

  /** Workspace-relative, normalised path; refuses absolute paths, `..`, NUL and `.git`. */
  private checkSyntax(path: string): string {
    if (typeof path !== 'string' || path.length === 0) throw new ConfinementError('an empty path');
    if (path.length > MAX_PATH) throw new ConfinementError('the path is too long');
    if (path.includes('\0')) throw new ConfinementError('the path contains a NUL byte');
    if (path.startsWith('/')) throw new ConfinementError(`${path}: absolute paths are refused; use a path relative to the workspace`);
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw new ConfinementError(`${path}: \`..\` is refused; use a path inside the workspace`);
    if (parts.some(isGitName)) throw new ConfinementError(`${path}: .git is off limits`);
    return parts.join('/');
  }

  private fsError(path: string, err: NodeJS.ErrnoException): ConfinementError {
    if (err instanceof ConfinementError) return err;
    const what: Record<string, string> = {
      ENOENT: 'no such file or directory',
      ELOOP: 'a symlink where a file was expected',
      EISDIR: 'is a directory',
      ENOTDIR: 'a parent is not a directory',
      EEXIST: 'already exists',
      ENOTEMPTY: 'directory not empty',
      EACCES: 'permission denied',
      EPERM: 'operation not permitted',
      ENXIO: 'not a regular file',
      ENAMETOOLONG: 'a name is too long',
      ENOSPC: 'no space left on the device',
    };
    // Never the raw message: it names /proc/self/fd paths that mean nothing to the model.
    return new ConfinementError(`${path}: ${what[err.code ?? ''] ?? `failed (${err.code ?? err.message})`}`);
  }
}

function isGitName(name: string): boolean {
  return name.toLowerCase() === '.git';
}

/** The walk needs /proc/self/fd to name this process's own descriptors (Linux, with its own /proc). */
function checkProcFd(root: string): void {
  const fd = openSync(root, DIR_FLAGS);
  try {
    const mine = fstatSync(fd);
    const seen = statSync(`/proc/self/fd/${fd}`, { throwIfNoEntry: false });
    if (!seen || seen.ino !== mine.ino || seen.dev !== mine.dev) {
      throw new Error('the confined file tools need /proc/self/fd (Linux, with a /proc of this pid namespace mounted)');
    }
  } finally {
    closeSync(fd);
  }
}
