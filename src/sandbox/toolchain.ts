import { accessSync, constants, existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, dirname, isAbsolute, join } from 'node:path';

/** The host's `/usr` and the top-level links or directories that usually point into it. */
export const SYSTEM_ROOT = '/usr';
const TOP_LEVEL = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Programs a repository's commands commonly need; the ones that exist are made visible. */
export const DEFAULT_TOOLS = ['bash', 'sh', 'env', 'node', 'npm', 'npx', 'corepack', 'git', 'yarn', 'pnpm'];

/** How the host's programs appear inside the jail: read-only, at their real paths. */
export interface Toolchain {
  /** Top-level entries mirrored from the host: symlinks (merged /usr) or read-only directories. */
  topLevel: Array<{ kind: 'symlink'; path: string; target: string } | { kind: 'dir'; path: string }>;
  /** Installation prefixes outside /usr (nvm, /opt/node…), bound read-only at the same path. */
  roBinds: string[];
  /** Files inside the bound trees that may hold credentials (global npmrc): hidden by an empty file. */
  masks: string[];
  /** PATH inside the jail. */
  path: string;
  /** Real path of bash (runs the commands) and of the programs the jail itself needs. */
  bash: string;
  /** Where each tool was found (tool -> real path), for diagnostics. */
  found: Record<string, string>;
}

export interface ToolchainOptions {
  /** The host PATH to search; default process.env.PATH plus the running node's directory. */
  hostPath?: string;
  tools?: readonly string[];
  /** Never bound whole (only the tool file itself): default the bot's home and its ancestors. */
  home?: string;
}

/** Finds the toolchain on the host. Throws when bash cannot be found. */
export function discoverToolchain(opts: ToolchainOptions = {}): Toolchain {
  const home = opts.home ?? homedir();
  const searchDirs = unique([...(opts.hostPath ?? process.env.PATH ?? '').split(delimiter), dirname(process.execPath)].filter((d) => isAbsolute(d)));
  const topLevel: Toolchain['topLevel'] = [];
  for (const path of TOP_LEVEL) {
    const st = lstatOrUndefined(path);
    if (!st) continue;
    if (st.isSymbolicLink()) topLevel.push({ kind: 'symlink', path, target: readlinkSync(path) });
    else if (st.isDirectory()) topLevel.push({ kind: 'dir', path });
  }
  const covered = (p: string) => isUnder(p, SYSTEM_ROOT) || topLevel.some((t) => t.kind === 'dir' && isUnder(p, t.path));

  const roBinds: string[] = [];
  const pathDirs: string[] = [];
  const found: Record<string, string> = {};
  const tools = opts.tools ?? DEFAULT_TOOLS;
  for (const tool of tools) {
    for (const dir of searchDirs) {
      const candidate = join(dir, tool);
      if (!isExecutableFile(candidate)) continue;
      const real = realpathSync(candidate);
      found[tool] = real;
      if (!covered(real)) roBinds.push(installPrefix(real, home, true) ?? real);
      // The directory the tool was found in goes on the jail's PATH (it may hold the symlink).
      const realDir = realpathSync(dir);
      if (covered(dir)) pathDirs.push(dir);
      else {
        const prefix = installPrefix(realDir, home, false);
        if (prefix) {
          roBinds.push(prefix);
          pathDirs.push(realDir);
        }
      }
      break;
    }
  }
  // The node that runs the bot, even when it is not on PATH.
  const node = realpathSync(process.execPath);
  found.node ??= node;
  if (!covered(node)) {
    roBinds.push(installPrefix(node, home, true) ?? node);
    pathDirs.push(dirname(node));
  }
  if (!found.bash) throw new Error('bash not found on PATH: the sandbox runs every command with bash');

  const binds = minimalRoots(unique(roBinds));
  const masks: string[] = [];
  for (const prefix of [SYSTEM_ROOT, join(SYSTEM_ROOT, 'local'), ...binds]) {
    // `npm config set -g` writes tokens to <prefix>/etc/npmrc.
    const npmrc = join(prefix, 'etc', 'npmrc');
    if (existsSync(npmrc)) masks.push(npmrc);
  }
  const path = unique([...pathDirs, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']).join(':');
  return { topLevel, roBinds: binds, masks: unique(masks), path, bash: found.bash, found };
}

/**
 * The installation a tool belongs to: `<prefix>/bin/tool` -> `<prefix>`, else the tool's
 * directory. Never the bot's home or one of its ancestors (that would expose the home and its
 * secrets): then undefined, and the caller binds the file alone (or nothing, for a directory).
 */
export function installPrefix(real: string, home: string, isFile: boolean): string | undefined {
  const dir = isFile ? dirname(real) : real;
  const prefix = basename(dir) === 'bin' ? dirname(dir) : dir;
  for (const candidate of [prefix, dir]) {
    if (candidate !== '/' && depth(candidate) >= 2 && !isUnder(home, candidate)) return candidate;
  }
  return undefined;
}

/** Removes paths that lie inside another path of the list. */
function minimalRoots(paths: string[]): string[] {
  return paths.filter((p) => !paths.some((q) => q !== p && isUnder(p, q)));
}

export function isUnder(path: string, root: string): boolean {
  if (root === '/') return true;
  return path === root || path.startsWith(`${root}/`);
}

function depth(p: string): number {
  return p.split('/').filter(Boolean).length;
}

function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

/** First executable called `name` on PATH (or the given absolute path), resolved to its real path. */
export function findProgram(name: string, hostPath = process.env.PATH ?? ''): string | undefined {
  if (isAbsolute(name)) return isExecutableFile(name) ? realpathSync(name) : undefined;
  for (const dir of [...hostPath.split(delimiter), '/usr/bin', '/bin', '/usr/sbin', '/sbin']) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return realpathSync(candidate);
  }
  return undefined;
}
