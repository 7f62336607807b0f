/**
 * Which root package.json scripts one simple command runs, per package manager (DESIGN.md §10):
 * the names a task may not redefine. Each tool's grammar as it is documented (npm's from its own
 * command list). When unsure whether a word names a script, it counts as one: protecting a
 * script that does not run costs nothing, missing one that does is the hole. A command that
 * plainly runs another package's scripts (`--prefix sub`, `--filter`, a workspace) names none of
 * the root's: those package.json files are not guarded.
 */

/** What `install` runs of the root package itself (each with its pre/post). */
const NPM_INSTALL = ['install', 'prepublish', 'prepare', 'dependencies'];
const PNPM_INSTALL = ['pnpm:devPreinstall', 'install', 'prepare'];
const BUN_INSTALL = ['install', 'prepare'];
/** `restart` without a restart script runs `stop` then `start`. */
const RESTART = ['restart', 'stop', 'start'];

/** npm's commands and aliases (lib/utils/cmd-list.js): a unique prefix of one is that command. */
const NPM_COMMANDS = (
  'access adduser approve-scripts audit bugs cache ci completion config dedupe deny-scripts deprecate diff dist-tag docs doctor edit exec explain explore ' +
  'find-dupes fund get help help-search init install install-ci-test install-scripts install-test link ll login logout ls org outdated owner pack ping pkg ' +
  'prefix profile prune publish query rebuild repo restart root run sbom search set shrinkwrap stage star stars start stop team test token trust undeprecate ' +
  'uninstall unpublish unstar update version view whoami'
).split(' ');
const NPM_ALIASES: Record<string, string> = {
  t: 'test',
  tst: 'test',
  'run-script': 'run',
  rum: 'run',
  urn: 'run',
  i: 'install',
  in: 'install',
  ins: 'install',
  inst: 'install',
  insta: 'install',
  instal: 'install',
  isnt: 'install',
  isnta: 'install',
  isntal: 'install',
  isntall: 'install',
  add: 'install',
  it: 'install-test',
  cit: 'install-ci-test',
  sit: 'install-ci-test',
  'clean-install-test': 'install-ci-test',
  ic: 'ci',
  'clean-install': 'ci',
  'install-clean': 'ci',
  'isntall-clean': 'ci',
  rb: 'rebuild',
  // Others npm knows, listed so prefixes stay as ambiguous as npm finds them.
  r: 'uninstall',
  rm: 'uninstall',
  un: 'uninstall',
  unlink: 'uninstall',
  remove: 'uninstall',
  u: 'update',
  up: 'update',
  upgrade: 'update',
  udpate: 'update',
  c: 'config',
  s: 'search',
  se: 'search',
  find: 'search',
  x: 'exec',
  why: 'explain',
  v: 'view',
  info: 'view',
  show: 'view',
  ln: 'link',
  list: 'ls',
  la: 'll',
  create: 'init',
  innit: 'init',
  home: 'docs',
  issues: 'bugs',
  author: 'owner',
  ddp: 'dedupe',
  verison: 'version',
  hlep: 'help',
  'dist-tags': 'dist-tag',
  ogr: 'org',
  'add-user': 'adduser',
};

/** What each npm command runs of the root's scripts. */
const NPM_RUNS: Record<string, readonly string[]> = {
  test: ['test'],
  start: ['start'],
  stop: ['stop'],
  restart: RESTART,
  install: NPM_INSTALL,
  ci: NPM_INSTALL,
  rebuild: NPM_INSTALL,
  'install-test': [...NPM_INSTALL, 'test'],
  'install-ci-test': [...NPM_INSTALL, 'test'],
};

/** Words that are surely a tool's own command, never one of the package's scripts. */
const YARN_BUILTINS = new Set(
  'bin cache config dedupe dlx exec help info init link login logout node npm outdated pack patch plugin publish remove set unlink unplug up upgrade version why'.split(' '),
);
const PNPM_BUILTINS = new Set(
  'audit bin c config create dedupe deploy dlx doctor env exec fetch help import init licenses link ln list ls ll la outdated pack patch patch-commit patch-remove prune publish rb rebuild remove rm root server setup store un uninstall unlink up update upgrade why'.split(
    ' ',
  ),
);
const BUN_BUILTINS = new Set('audit build c completions create discord exec feedback help info init link outdated patch patch-commit pm publish remove repl rm unlink update upgrade why x'.split(' '));

/** Options that take the next word as their value (unless written `--opt=value`), per tool. */
const VALUE_OPTIONS: Record<Tool, ReadonlySet<string>> = {
  npm: new Set(['--prefix', '-C', '--workspace', '-w', '--loglevel', '--script-shell', '--userconfig', '--globalconfig', '--cache', '--registry', '--node-options', '--tag', '--omit', '--include']),
  yarn: new Set(['--cwd', '--cache-folder', '--modules-folder', '--global-folder', '--link-folder', '--mutex', '--network-timeout', '--network-concurrency', '--registry', '--use-yarnrc']),
  pnpm: new Set(['-C', '--dir', '--filter', '-F', '--filter-prod', '--reporter', '--loglevel', '--workspace-concurrency', '--resume-from', '--test-pattern', '--changed-files-ignore-pattern']),
  bun: new Set([
    '--cwd',
    '--filter',
    '-F',
    '--elide-lines',
    '--shell',
    '--config',
    '-c',
    '--env-file',
    '--preload',
    '-r',
    '--require',
    '--import',
    '--tsconfig-override',
    '--define',
    '-d',
    '--loader',
    '-l',
    '--port',
    '--conditions',
  ]),
  deno: new Set(['--cwd', '--config', '-c', '--filter', '-f']),
  node: new Set(['-r', '--require', '--import', '--loader', '--experimental-loader', '-C', '--conditions', '--env-file', '--input-type', '--title']),
};
/** Options whose value is a folder: the scripts are that folder's package's, unless it is the root. */
const FOLDER_OPTIONS: Record<Tool, ReadonlySet<string>> = {
  npm: new Set(['--prefix', '-C']),
  yarn: new Set(['--cwd']),
  pnpm: new Set(['-C', '--dir']),
  bun: new Set(['--cwd']),
  deno: new Set(['--cwd']),
  node: new Set(),
};
/** Options that run other packages' scripts (workspaces, filters) instead of the root's. */
const ELSEWHERE_OPTIONS: Record<Tool, ReadonlySet<string>> = {
  npm: new Set(['--workspace', '-w', '--workspaces', '-ws']),
  yarn: new Set(),
  pnpm: new Set(['--filter', '-F', '--filter-prod', '-r', '--recursive']),
  bun: new Set(['--filter', '-F', '--workspaces']),
  deno: new Set(['--filter', '-f', '--recursive', '-r']),
  node: new Set(),
};
/** Options that put the root back among the packages whose scripts run. */
const WITH_ROOT = new Set(['--include-workspace-root', '-iwr', '--workspace-root', '-w']);

type Tool = 'npm' | 'yarn' | 'pnpm' | 'bun' | 'deno' | 'node';

/** The root scripts `words` (one simple command, its prefixes gone) runs. */
export function packageScriptsOf(words: readonly string[]): string[] {
  const [tool, ...args] = words;
  switch (tool) {
    case 'npm':
      return npm(args);
    case 'yarn':
      return yarn(args);
    case 'pnpm':
      return pnpm(args);
    case 'bun':
      return bun(args);
    case 'deno':
      return deno(args);
    case 'node':
      return node(args);
    default:
      return [];
  }
}

/** npm reads its options anywhere before `--`: all of them decide where the scripts run. */
function npm(args: readonly string[]): string[] {
  const { positional, options } = parse('npm', args, false);
  if (elsewhere('npm', options)) return [];
  const command = npmCommand(positional[0]);
  if (command === 'run') return scriptName(positional[1]);
  return command ? [...(NPM_RUNS[command] ?? [])] : [];
}

/** yarn (classic and berry): `yarn` installs, `yarn run <name>`, and `yarn <name>` for any word not its own. */
function yarn(args: readonly string[]): string[] {
  const { positional, options, rest } = parse('yarn', args, true);
  if (elsewhere('yarn', options)) return [];
  const command = positional[0];
  if (command === undefined || command === 'install' || command === 'add') return [...NPM_INSTALL];
  if (command === 'run') return scriptName(parse('yarn', rest, true).positional[0]);
  // `workspace <name> …` and `workspaces foreach …` run other packages' scripts.
  if (command === 'workspace' || command === 'workspaces' || YARN_BUILTINS.has(command)) return [];
  return scriptName(command);
}

/** pnpm: `test`/`start`/`restart`, `run <name>`, the install family, and `pnpm <name>` for any word not its own. */
function pnpm(args: readonly string[]): string[] {
  const { positional, options, rest } = parse('pnpm', args, true);
  if (elsewhere('pnpm', options)) return [];
  const command = positional[0];
  if (command === undefined) return [];
  if (command === 'run' || command === 'run-script') {
    const inner = parse('pnpm', rest, true);
    return elsewhere('pnpm', inner.options) ? [] : scriptName(inner.positional[0]);
  }
  if (command === 'test' || command === 't' || command === 'tst') return ['test'];
  if (command === 'restart') return [...RESTART];
  if (command === 'install' || command === 'i' || command === 'add') return [...PNPM_INSTALL];
  if (command === 'install-test' || command === 'it') return [...PNPM_INSTALL, 'test'];
  if (PNPM_BUILTINS.has(command)) return [];
  return scriptName(command);
}

/** bun: `bun run <name>` and `bun <name>`; `bun test` is bun's own test runner, not a script. */
function bun(args: readonly string[]): string[] {
  const { positional, options, rest } = parse('bun', args, true);
  if (elsewhere('bun', options) || options.has('-e') || options.has('--eval') || options.has('-p') || options.has('--print')) return [];
  let command = positional[0];
  if (command === 'run') {
    const inner = parse('bun', rest, true);
    if (elsewhere('bun', inner.options)) return [];
    command = inner.positional[0];
  } else if (command === 'install' || command === 'i' || command === 'add' || command === 'a') {
    return [...BUN_INSTALL];
  } else if (command === undefined || command === 'test' || BUN_BUILTINS.has(command)) {
    return [];
  }
  // A path is a file to run, not a script name.
  return command?.includes('/') ? [] : scriptName(command);
}

/** `deno task <name>`: a deno.json task, or else the package.json script of that name. */
function deno(args: readonly string[]): string[] {
  const { positional, options, rest } = parse('deno', args, true);
  if (positional[0] !== 'task' || elsewhere('deno', options)) return [];
  const inner = parse('deno', rest, true);
  return elsewhere('deno', inner.options) ? [] : scriptName(inner.positional[0]);
}

/** `node --run <name>` (Node 22+) runs the package.json script. */
function node(args: readonly string[]): string[] {
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === '--run') return scriptName(args[i + 1]);
    if (word.startsWith('--run=')) return scriptName(word.slice('--run='.length));
    if (!word.startsWith('-') || word === '--' || word === '-e' || word === '--eval' || word === '-p' || word === '--print') return [];
    if (VALUE_OPTIONS.node.has(word)) i++;
  }
  return [];
}

interface Parsed {
  positional: string[];
  /** Each option seen, with its value ('' for a flag). */
  options: Map<string, string>;
  /** The words after the first positional (when stopping there). */
  rest: readonly string[];
}

/** Options and positionals; `stopAtCommand`: options after the first positional are not the tool's. */
function parse(tool: Tool, args: readonly string[], stopAtCommand: boolean): Parsed {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (word === '--') break;
    if (word.startsWith('-') && word !== '-') {
      const eq = word.indexOf('=');
      if (eq > 0) options.set(word.slice(0, eq), word.slice(eq + 1));
      else if (VALUE_OPTIONS[tool].has(word)) options.set(word, args[++i] ?? '');
      else options.set(word, '');
      continue;
    }
    positional.push(word);
    if (stopAtCommand) return { positional, options, rest: args.slice(i + 1) };
  }
  return { positional, options, rest: [] };
}

/** The command runs another package's scripts, not the root's. */
function elsewhere(tool: Tool, options: ReadonlyMap<string, string>): boolean {
  for (const [option, value] of options) {
    if (FOLDER_OPTIONS[tool].has(option) && !maybeRoot(value)) return true;
  }
  // pnpm's `-w` is the workspace root; npm's is a workspace.
  const withRoot = [...options.keys()].some((o) => WITH_ROOT.has(o) && !(tool === 'npm' && o === '-w'));
  return !withRoot && [...options.keys()].some((o) => ELSEWHERE_OPTIONS[tool].has(o));
}

/** A folder value that is, or may be, the repository root: `.`, or anything computed. */
function maybeRoot(value: string): boolean {
  const plain = unquote(value);
  return plain === undefined || /^(\.\/?)+$/.test(plain) || /[$`~*?[]/.test(plain);
}

/** npm's `deref`: exact names, aliases, camelCase, then a prefix that names one command only. */
function npmCommand(word: string | undefined): string | undefined {
  if (word === undefined) return undefined;
  const name = word.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
  if (NPM_COMMANDS.includes(name)) return name;
  if (NPM_ALIASES[name]) return NPM_ALIASES[name];
  const matches = [...NPM_COMMANDS, ...Object.keys(NPM_ALIASES)].filter((c) => c.startsWith(name));
  if (matches.length !== 1) return undefined;
  return NPM_ALIASES[matches[0]!] ?? matches[0];
}

/** A script name as written; nothing when it is computed (`$NAME`, a substitution). */
function scriptName(word: string | undefined): string[] {
  const name = word === undefined ? undefined : unquote(word);
  return name ? [name] : [];
}

/** A word without its plain quotes; undefined when the shell would compute it. */
export function unquote(word: string): string | undefined {
  const single = /^'([^']*)'$/.exec(word);
  if (single) return single[1];
  const double = /^"([^"$`\\]*)"$/.exec(word);
  if (double) return double[1];
  return /["'$`\\]/.test(word) ? undefined : word;
}
