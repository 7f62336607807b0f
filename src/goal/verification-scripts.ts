import { packageScriptsOf, unquote } from './package-script-commands.js';

/**
 * The scripts a verification command runs by path (`bash scripts/check.sh`, `./verify.sh`,
 * `node test.js`): protected from the task as test files are, so a task cannot add `|| true`
 * inside what grades it. Only plain words count; anything quoted or computed is left to
 * `verification_paths`.
 */
const INTERPRETERS = new Set(['bash', 'sh', 'zsh', 'dash', 'node', 'python', 'python3', 'ruby', 'perl', 'deno', 'bun', 'tsx', 'ts-node', 'php']);
/** Options after which the next word is code or a module, not a script path. */
const CODE_OPTIONS = new Set(['-c', '-e', '-m', '--eval', '-p', '--print', 'run', '-r', '--require', '--import', '--loader']);
/** The files GNU make reads without `-f`, in its order. */
const MAKEFILES = ['GNUmakefile', 'makefile', 'Makefile'];
const PLAIN = /^[A-Za-z0-9_.@+-][A-Za-z0-9_./@+-]*$/;

export function verificationScripts(command: string): string[] {
  const out = new Set<string>();
  for (const simple of command.split(/&&|\|\||[;|\n&]/)) {
    // `timeout 60 bash x.sh`, `(bash x.sh)`, `time bash x.sh` run x.sh as surely as `bash x.sh`.
    const words = commandWords(simple);
    if (words[0] === 'npx') words.shift();
    const [first, ...rest] = words;
    if (!first) continue;
    // `make test`: the recipe is the script (`test:` rewritten to `true`). The root's makefiles
    // only; `make -C dir` or `-f file` is left to `verification_paths`.
    if (first === 'make' || first === 'gmake') {
      for (const name of MAKEFILES) out.add(name);
      continue;
    }
    if (first.includes('/')) {
      add(out, first);
      continue;
    }
    if (!INTERPRETERS.has(first)) continue;
    for (const word of rest) {
      if (CODE_OPTIONS.has(word)) break;
      if (word.startsWith('-')) continue;
      add(out, word);
      break;
    }
  }
  return [...out];
}

/** A relative path inside the repository, as a literal (no glob characters can occur in PLAIN). */
function add(out: Set<string>, word: string): void {
  const path = word.replace(/^(\.\/)+/, '');
  if (!PLAIN.test(path) || path.split('/').includes('..') || path.startsWith('/')) return;
  out.add(path);
}

/** Words that run the command after them (with their own options and operands skipped). */
const WRAPPERS = new Set(['env', 'exec', 'command', 'time', 'nice', 'nohup', 'corepack']);

/**
 * The root package.json scripts a verification command runs (`npm test`, `yarn lint`, `pnpm run
 * check`, `bun run test`, with their pre/post hooks checked by the caller): the task may not
 * redefine them (DESIGN.md §10). Once the command `cd`s to a named folder, what follows runs that
 * folder's package, not the root's.
 */
export function verificationPackageScripts(command: string): string[] {
  const out = new Set<string>();
  let atRoot = true;
  // Where each open subshell started: a `cd` inside `( … )` ends with it.
  const subshells: boolean[] = [];
  for (const simple of command.split(/&&|\|\||[;|\n&]/)) {
    for (let i = /^\s*\(*/.exec(simple)![0].replace(/\s/g, '').length; i > 0; i--) subshells.push(atRoot);
    const words = commandWords(simple);
    if (words[0] === 'cd' || words[0] === 'pushd') {
      const target = words.slice(1).find((w) => !w.startsWith('-'));
      const plain = target === undefined ? '~' : unquote(target);
      // A computed folder may be the root; `.` is.
      if (plain !== undefined && !/^(\.\/?)+$/.test(plain) && !/[$`]/.test(plain)) atRoot = false;
    } else if (words[0] === 'popd') {
      atRoot = true;
    } else if (atRoot) {
      for (const name of packageScriptsOf(words)) out.add(name);
    }
    for (let i = /\)*\s*$/.exec(simple)![0].replace(/\s/g, '').length; i > 0 && subshells.length > 0; i--) atRoot = subshells.pop()!;
  }
  return [...out];
}

/** The words of one simple command from the program on: assignments and wrappers gone. */
function commandWords(simple: string): string[] {
  const words = simple
    .trim()
    .replace(/^[({\s]+/, '')
    .split(/\s+/)
    .filter(Boolean);
  while (true) {
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
    if (words[0] === 'timeout') {
      words.shift();
      while (words.length > 0 && words[0]!.startsWith('-')) words.shift();
      words.shift(); // the duration
    } else if (WRAPPERS.has(words[0] ?? '')) {
      words.shift();
      while (words.length > 0 && words[0]!.startsWith('-')) words.shift();
    } else {
      return words.map((w) => w.replace(/[)}]+$/, '')).filter(Boolean);
    }
  }
}
