import { constants, realpathSync } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';

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

/**
 * The agent's file tools, confined to the workspace. Paths are workspace-relative; every
 * request is refused, with a message the model can act on, when it:
 * - is absolute, empty, contains `..` or a NUL byte;
 * - names `.git` (any case) or anything under it, directly or through a symlink;
 * - resolves (following symlinks) outside the workspace;
 * - reads a file larger than the cap or writes content larger than the cap;
 * - reads or writes something that is not a regular file, or a file with other hard links.
 * Real paths are resolved, and the final open never follows a symlink (O_NOFOLLOW).
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
  }

  /** The file's text (UTF-8). */
  async read(path: string): Promise<string> {
    const real = await this.resolveExisting(path);
    const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err: NodeJS.ErrnoException) => {
      throw this.fsError(path, err);
    });
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new ConfinementError(`${path}: not a regular file`);
      if (st.nlink > 1) throw new ConfinementError(`${path}: refused, the file has other hard links`);
      if (st.size > this.maxRead) throw new ConfinementError(`${path}: ${st.size} bytes, more than the ${this.maxRead}-byte read limit`);
      const buf = Buffer.alloc(st.size);
      const { bytesRead } = await handle.read(buf, 0, st.size, 0);
      return buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  }

  /** Creates or replaces the file (and its missing parent directories). */
  async write(path: string, content: string): Promise<void> {
    const bytes = Buffer.from(content, 'utf8');
    if (bytes.length > this.maxWrite) throw new ConfinementError(`${path}: ${bytes.length} bytes, more than the ${this.maxWrite}-byte write limit`);
    const target = await this.resolveForWrite(path);
    const handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644).catch(
      (err: NodeJS.ErrnoException) => {
        throw this.fsError(path, err);
      },
    );
    try {
      const st = await handle.stat();
      if (!st.isFile()) throw new ConfinementError(`${path}: not a regular file`);
      if (st.nlink > 1) throw new ConfinementError(`${path}: refused, the file has other hard links`);
      await handle.truncate(0);
      await handle.write(bytes, 0, bytes.length, 0);
    } finally {
      await handle.close();
    }
  }

  /** The entries of a directory (never `.git`), sorted by name. */
  async list(path = '.'): Promise<{ entries: DirEntry[]; truncated: boolean }> {
    const real = await this.resolveExisting(path, true);
    const st = await lstat(real);
    if (!st.isDirectory()) throw new ConfinementError(`${path}: not a directory`);
    const dirents = (await readdir(real, { withFileTypes: true })).filter((d) => !isGitName(d.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
    const entries = dirents.slice(0, this.maxList).map((d) => ({
      name: d.name,
      type: d.isSymbolicLink() ? ('symlink' as const) : d.isDirectory() ? ('dir' as const) : d.isFile() ? ('file' as const) : ('other' as const),
    }));
    return { entries, truncated: dirents.length > entries.length };
  }

  /** Removes a file, a symlink (never its target) or an empty directory. */
  async remove(path: string): Promise<void> {
    const rel = this.checkSyntax(path);
    if (rel === '') throw new ConfinementError(`${path}: cannot remove the workspace itself`);
    const parent = await this.resolveExisting(dirname(rel) === '.' ? '.' : dirname(rel), true);
    const full = join(parent, basename(rel));
    const st = await lstat(full).catch((err: NodeJS.ErrnoException) => {
      throw this.fsError(path, err);
    });
    if (st.isDirectory()) await rmdir(full).catch((err: NodeJS.ErrnoException) => {
      throw this.fsError(path, err);
    });
    else await unlink(full);
  }

  /**
   * The real host path of an existing workspace path, after checking it stays inside the
   * workspace and out of `.git`. Exposed for tools that hand a path to another program.
   */
  async resolveExisting(path: string, allowRoot = false): Promise<string> {
    const rel = this.checkSyntax(path);
    if (rel === '' && !allowRoot) throw new ConfinementError(`${path}: names the workspace itself, not a file`);
    const real = await realpath(join(this.root, rel)).catch((err: NodeJS.ErrnoException) => {
      throw this.fsError(path, err);
    });
    this.checkInside(path, real);
    return real;
  }

  /** Where a write goes: existing parents resolved and checked, missing ones created inside. */
  private async resolveForWrite(path: string): Promise<string> {
    const rel = this.checkSyntax(path);
    if (rel === '') throw new ConfinementError(`${path}: names the workspace itself, not a file`);
    const parts = rel.split('/');
    const name = parts.pop()!;
    // The deepest existing ancestor, resolved; then create the rest one by one (each checked).
    let dir = this.root;
    let i = 0;
    for (; i < parts.length; i++) {
      const next = join(dir, parts[i]!);
      const st = await lstat(next).catch(() => undefined);
      if (!st) break;
      dir = await realpath(next);
      this.checkInside(path, dir);
      const dst = await lstat(dir);
      if (!dst.isDirectory()) throw new ConfinementError(`${path}: ${parts.slice(0, i + 1).join('/')} is not a directory`);
    }
    for (; i < parts.length; i++) {
      dir = join(dir, parts[i]!);
      await mkdir(dir).catch((err: NodeJS.ErrnoException) => {
        throw this.fsError(path, err);
      });
    }
    const target = join(dir, name);
    const st = await lstat(target).catch(() => undefined);
    if (st?.isSymbolicLink()) {
      // A symlink is followed only when its target exists and stays inside the workspace.
      const real = await realpath(target).catch(() => {
        throw new ConfinementError(`${path}: a symlink whose target does not exist`);
      });
      this.checkInside(path, real);
      return real;
    }
    this.checkInside(path, target);
    return target;
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

  private checkInside(path: string, real: string): void {
    if (real !== this.root && !real.startsWith(this.root + sep)) throw new ConfinementError(`${path}: resolves outside the workspace`);
    const rel = relative(this.root, real);
    if (rel.split(sep).some(isGitName)) throw new ConfinementError(`${path}: resolves into .git, which is off limits`);
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
      ENXIO: 'not a regular file',
    };
    return new ConfinementError(`${path}: ${what[err.code ?? ''] ?? err.message}`);
  }
}

function isGitName(name: string): boolean {
  return name.toLowerCase() === '.git';
}
