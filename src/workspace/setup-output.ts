import { lstat, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Git, literalPathspec } from './git.js';
import { SetupCache } from './setup-cache.js';

/** Untracked folders beyond which `status` takes one look (see there). */
const MAX_EXCLUDED_DIRS = 200;

/**
 * What setup left in a goal's tree beyond the commit, as git sees it: the baseline every rollback
 * keeps, what no checkpoint takes (unless a task changes a file), and what the setup cache keeps.
 * Every blob is hashed by git (a symlink as a link): the host reads no file of the tree.
 */
export class SetupOutput {
  /** New folders (never added) and new or rewritten files with the blob setup left (null: deleted). */
  private dirs: string[] = [];
  private files = new Map<string, string | null>();
  /** Everything, ignored or not: what the setup cache keeps. */
  paths: string[] = [];
  /** `git clean -e` patterns: ignored and untracked paths that survive a rollback. */
  keep: string[] = [];
  /** The input files' blobs being read since `readInputs`. */
  private inputsRead: { commit: string; names: string; read: Promise<string> } | undefined;

  constructor(
    private readonly git: Git,
    private readonly dir: string,
  ) {}

  /**
   * Reads the tree after setup; returns what is not gitignored (named in the log). `untrackedDirs`:
   * folders likely untracked (a restore's, as they were when saved), so both looks run at once.
   */
  async record(untrackedDirs: readonly string[] = []): Promise<string[]> {
    const entries = await this.status(untrackedDirs);
    const untracked = entries.filter((e) => e.code === '??').map((e) => e.path);
    const dirs = untracked.filter((p) => p.endsWith('/'));
    const files = [...untracked.filter((p) => !p.endsWith('/')), ...entries.filter((e) => e.code !== '??' && e.code !== '!!').map((e) => e.path)];
    // The blobs setup left: staged, read back, unstaged.
    let blobs = new Map<string, string | null>();
    if (files.length > 0) {
      await this.git.run(this.dir, ['add', '--all', '--', ...files.map(literalPathspec)]);
      blobs = await this.stagedBlobs(files);
      await this.git.run(this.dir, ['reset', '--quiet']);
    }
    this.dirs = dirs;
    this.files = blobs;
    this.paths = entries.map((e) => e.path);
    this.keep = entries.filter((e) => e.code === '!!' || e.code === '??').map((e) => `/${e.path.replace(/[\\*?[\]!#]/g, (c) => `\\${c}`)}`);
    await noteFolders(this.dir, this.paths);
    return [...dirs, ...files];
  }

  /**
   * Git's view of the tree: changes, untracked files and folders, ignored ones. Two looks: without
   * ignored files first, where git stops at an untracked folder's first file; then the ignored ones
   * outside those folders. A single look with `--ignored` walks every untracked folder whole (all
   * of node_modules) for the ignored files inside, which their folder already covers (it is kept,
   * cached and left out as a whole). With a guess of the untracked folders, the second look runs
   * beside the first, leaving the guessed ones out; it stands when the first shows each guessed
   * folder untracked (what it saw in the other untracked folders is dropped), else it runs again.
   */
  private async status(guess: readonly string[]): Promise<Array<{ code: string; path: string }>> {
    const look = async (extra: string[]) =>
      (await this.git.run(this.dir, ['status', '--porcelain=v1', '-z', '--untracked-files=normal', '--no-renames', '--ignore-submodules=all', ...extra]))
        .split('\0')
        .filter((e) => e.length > 3)
        .map((e) => ({ code: e.slice(0, 2), path: e.slice(3) }));
    const ignoredOutside = (left: readonly string[]) => look(['--ignored=matching', '--', '.', ...left.map((d) => `:(exclude,literal)${d}`)]);
    const [plain, guessed] = await Promise.all([look([]), guess.length > 0 ? ignoredOutside(guess) : undefined]);
    const dirs = plain.filter((e) => e.code === '??' && e.path.endsWith('/')).map((e) => e.path.replace(/\/$/, ''));
    // Past a few hundred folders, one look costs less than the pathspecs that leave them out.
    if (dirs.length > MAX_EXCLUDED_DIRS) return look(['--ignored=matching']);
    const inUntracked = (path: string) => dirs.some((d) => path === `${d}/` || path.startsWith(`${d}/`));
    const ignored = (guessed && guess.every((g) => dirs.includes(g)) ? guessed : await ignoredOutside(dirs)).filter((e) => e.code === '!!' && !inUntracked(e.path));
    return [...plain, ...ignored];
  }

  /** Of what `record` read, the folders git showed untracked (kept in the setup cache as a hint for `record` after a restore). */
  untrackedDirs(): string[] {
    return [...this.dirs];
  }

  /** Pathspecs that leave out setup's folders, and its files too when `withFiles`. */
  excludes(withFiles: boolean): string[] {
    return [...this.dirs.map((d) => d.replace(/\/$/, '')), ...(withFiles ? this.files.keys() : [])].map((p) => `:(exclude,literal)${p}`);
  }

  /** After `add`: unstages each file setup wrote that the task left as setup left it. */
  async unstageUntouched(): Promise<void> {
    const files = [...this.files.keys()];
    const now = await this.stagedBlobs(files);
    const untouched = files.filter((p) => now.get(p) === this.files.get(p));
    if (untouched.length > 0) await this.git.run(this.dir, ['reset', '--quiet', '--', ...untouched.map(literalPathspec)]);
  }

  /**
   * Starts reading the input files' blobs at `commit` (objects only: it may run beside a checkout);
   * `key` for that commit and those names then takes this read instead of starting its own.
   */
  readInputs(commit: string, inputNames: readonly string[]): void {
    const read = this.inputsAt(commit, inputNames);
    read.catch(() => undefined); // awaited, and its error seen, by `key`
    this.inputsRead = { commit, names: inputNames.join('\0'), read };
  }

  /** The setup cache's key: the base branch's name, the setup's identity and the blobs of its input files at `commit`. */
  async key(base: string, setup: { commands: readonly string[]; network: boolean }, inputNames: readonly string[], commit: string): Promise<string> {
    const early = this.inputsRead;
    this.inputsRead = undefined;
    const out = early && early.commit === commit && early.names === inputNames.join('\0') ? await early.read : await this.inputsAt(commit, inputNames);
    const inputs = out
      .split('\0')
      .map((e) => /^\d+ \w+ ([0-9a-f]+)\t([\s\S]+)$/.exec(e))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[2]!, m[1]!] as const)
      .sort((a, b) => a[0].localeCompare(b[0]));
    return SetupCache.key({ base, commands: setup.commands, network: setup.network, inputs });
  }

  private inputsAt(commit: string, inputNames: readonly string[]): Promise<string> {
    return inputNames.length > 0 ? this.git.run(this.dir, ['ls-tree', '-z', commit, '--', ...inputNames.map(literalPathspec)]) : Promise.resolve('');
  }

  /** The staged blob of each path (null: not in the index). */
  private async stagedBlobs(paths: string[]): Promise<Map<string, string | null>> {
    const blobs = new Map<string, string | null>(paths.map((p) => [p, null]));
    if (paths.length === 0) return blobs;
    const out = await this.git.run(this.dir, ['ls-files', '--stage', '-z', '--', ...paths.map(literalPathspec)]);
    for (const entry of out.split('\0')) {
      const m = /^\d+ ([0-9a-f]+) \d\t([\s\S]*)$/.exec(entry);
      if (m && blobs.has(m[2]!)) blobs.set(m[2]!, m[1]!);
    }
    return blobs;
  }
}

/** Where `record` notes setup's top-level folders for the release (see dropSetupFolders). */
const FOLDERS_NOTE = 'goal-loop-setup-folders';

/** Setup's folders at the top of the tree (node_modules): never a tracked one, as git lists a folder only when it tracks nothing in it. */
async function noteFolders(dir: string, paths: readonly string[]): Promise<void> {
  const names = [...new Set(paths.filter((p) => /^[^/]+\/$/.test(p)).map((p) => p.slice(0, -1)))];
  // In the workspace's own `.git` (read-only in the jail), gone with it when the tree is parked.
  if ((await lstat(join(dir, '.git')).catch(() => undefined))?.isDirectory()) await writeFile(join(dir, '.git', FOLDERS_NOTE), JSON.stringify(names));
}

/**
 * Deletes the setup folders `record` noted, before a released tree is parked: the next goal's
 * checkout would clean them out anyway (its setup or the setup cache provides its own, never
 * another goal's tree), on its own clock and after scrubbing every file in them. Only real
 * folders at the top of the tree: a link in the place of one is left to that clean.
 */
export async function dropSetupFolders(dir: string): Promise<void> {
  let names: unknown;
  try {
    names = JSON.parse(await readFile(join(dir, '.git', FOLDERS_NOTE), 'utf8'));
  } catch {
    return;
  }
  if (!Array.isArray(names)) return;
  for (const name of names) {
    if (typeof name !== 'string' || name === '' || name.includes('/') || name === '.git' || name === '.' || name === '..') continue;
    if ((await lstat(join(dir, name)).catch(() => undefined))?.isDirectory()) await rm(join(dir, name), { recursive: true, force: true });
  }
}
