/**
 * The scripts a verification command runs by path (`bash scripts/check.sh`, `./verify.sh`,
 * `node test.js`): protected from the task as test files are, so a task cannot add `|| true`
 * inside what grades it. Only plain words count; anything quoted or computed is left to
 * `verification_paths`.
 */
const INTERPRETERS = new Set(['bash', 'sh', 'zsh', 'dash', 'node', 'python', 'python3', 'ruby', 'perl', 'deno', 'bun', 'tsx', 'ts-node', 'php']);
/** Options after which the next word is code or a module, not a script path. */
const CODE_OPTIONS = new Set(['-c', '-e', '-m', '--eval', '-p', '--print', 'run', '-r', '--require', '--import', '--loader']);
const PLAIN = /^[A-Za-z0-9_.@+-][A-Za-z0-9_./@+-]*$/;

export function verificationScripts(command: string): string[] {
  const out = new Set<string>();
  for (const simple of command.split(/&&|\|\||[;|\n&]/)) {
    const words = simple.trim().split(/\s+/).filter(Boolean);
    while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
    if (words[0] === 'npx' || words[0] === 'exec' || words[0] === 'env') words.shift();
    const [first, ...rest] = words;
    if (!first) continue;
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
