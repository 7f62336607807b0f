import { plainText } from '../common/plain-text.js';

/**
 * What a failure says to a person: the hint added when a command was not found and no setup ran,
 * and the one line the console shows for a task's last failure. Pure functions.
 */

/** Lockfiles (top level of the workspace), in the order they are looked for, and the install each implies. */
export const LOCKFILE_INSTALLS: ReadonlyArray<readonly [lockfile: string, install: string]> = [
  ['package-lock.json', 'npm ci'],
  ['npm-shrinkwrap.json', 'npm ci'],
  ['pnpm-lock.yaml', 'pnpm install --frozen-lockfile'],
  ['yarn.lock', 'yarn install --frozen-lockfile'],
  ['bun.lock', 'bun install --frozen-lockfile'],
  ['bun.lockb', 'bun install --frozen-lockfile'],
  ['requirements.txt', 'pip install -r requirements.txt'],
  ['Cargo.lock', 'cargo fetch'],
  // No lockfile: a package.json alone still names its dependencies.
  ['package.json', 'npm install'],
];

/** The first line of the missing-setup hint; it also marks where a failure's own text ends. */
export const MISSING_SETUP_HINT_HEAD = 'hint: no setup ran in this run';

/** Exit 126 (not executable) or 127 (command not found): a tool that was never installed, typically. */
export function isCommandNotFound(exitCode: number | null): boolean {
  return exitCode === 126 || exitCode === 127;
}

// A module or package the program imports is not installed (Node's ESM and CommonJS loaders, Python).
const MISSING_MODULE = /\bERR_MODULE_NOT_FOUND\b|\bError: Cannot find module '|\bModuleNotFoundError: No module named /;

/**
 * A failure that says the dependencies were never installed: a command not found or not
 * executable, or a program whose imports are missing.
 */
export function isMissingDependency(result: { exitCode: number | null; output: string }): boolean {
  return isCommandNotFound(result.exitCode) || (result.exitCode !== 0 && result.exitCode !== null && MISSING_MODULE.test(result.output));
}

/** The install command the lockfiles present suggest, else a placeholder. */
export function guessInstallCommand(present: (lockfile: string) => boolean): string {
  const install = LOCKFILE_INSTALLS.find(([file]) => present(file))?.[1] ?? '<your install command>';
  // yarn 2+ (a `.yarnrc.yml` beside its lockfile) calls a frozen install `--immutable`.
  return install.startsWith('yarn ') && present('.yarnrc.yml') ? 'yarn install --immutable' : install;
}

/** The hint appended to a not-found failure when the repo config has no setup: the config to add. */
export function missingSetupHint(install: string): string {
  return [
    `${MISSING_SETUP_HINT_HEAD} (the repo config has no \`setup\`), so the dependencies were never installed.`,
    'Add the install command to the repo config on the base branch, then run again:',
    '  # .github/goal-loop.yml',
    '  setup:',
    `    - ${install}`,
    '  network: setup',
  ].join('\n');
}

// Lines a test runner or a shell marks as the failure.
const FAILING = [
  /\bFAIL(ED)?\b/,
  /[✕×✖✗]/,
  /Error\b/, // Error:, TypeError, AssertionError
  /\berror:/i,
  /\bERROR\b/,
  /\bexpected\b/i,
  /^\s*not ok\b/,
  /\bfailed\b/i,
  /No such file or directory|command not found|: not found$|Permission denied/,
  /npm ERR!/,
];
const NAMED_ERROR = /\b[A-Z][A-Za-z]*(Error|Exception)\b( \[[A-Z_]+\])?:/;
const CUT_MARKER = /^\[… \d+ bytes cut.*…\]$|^\[goal-loop: log cut/;
const HEADLINE = /^.*(exited with code -?\d+|was killed by \S+|timed out after \d+s and was killed):$/;

/**
 * One line for a task's last failure, at most `width` characters: the headline (what failed and
 * how) and the lines that explain it — those a test runner marks as failing, else the last
 * non-empty ones. Control characters (colours, cursor moves) are dropped.
 */
export function summarizeFailure(error: string, maxWidth = 160): string {
  const width = Math.max(20, Math.floor(maxWidth));
  const hintAt = error.indexOf(MISSING_SETUP_HINT_HEAD);
  const hinted = hintAt >= 0;
  const lines = plainText(hinted ? error.slice(0, hintAt) : error)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const first = lines[0] ?? '';
  const isHeadline = lines.length > 1 && (HEADLINE.test(first) || first.endsWith(':'));
  const headline = isHeadline ? first.slice(0, -1) : '';
  const body = (isHeadline ? lines.slice(1) : lines).filter((l) => !CUT_MARKER.test(l));
  const suffix = !hinted ? '' : ([' (no setup ran: add `setup:` to .github/goal-loop.yml)', ' (no setup ran)'].find((s) => s.length <= width / 3) ?? '');
  if (!headline && body.length === 0) return truncate(suffix.trim(), width);

  // A named error (`ReferenceError: …`, `AssertionError [ERR_ASSERTION]: …`) says most: it goes first.
  const marked = unique(body.filter((l) => FAILING.some((re) => re.test(l)))).sort((a, b) => Number(NAMED_ERROR.test(b)) - Number(NAMED_ERROR.test(a)));
  const room = width - suffix.length;
  const head = headline ? `${truncate(headline, Math.max(20, Math.floor(room / 2)))}: ` : '';
  const detailRoom = Math.max(10, room - head.length);
  const detail = marked.length > 0 ? joinUpTo(marked, detailRoom) : joinUpTo(body.slice().reverse(), detailRoom, true);
  return truncate(`${head}${detail}`.replace(/: $/, ''), room) + suffix;
}

/** Joins lines with " | " while they fit (at least the first, cut); `reversed`: lines are last-first. */
function joinUpTo(lines: string[], room: number, reversed = false): string {
  const taken: string[] = [];
  let used = 0;
  for (const line of lines) {
    const cost = line.length + (taken.length > 0 ? 3 : 0);
    if (taken.length > 0 && used + cost > room) break;
    taken.push(line);
    used += cost;
  }
  return truncate((reversed ? taken.reverse() : taken).join(' | '), room);
}

function truncate(text: string, width: number): string {
  const chars = Array.from(text);
  return chars.length > width ? `${chars.slice(0, Math.max(0, width - 1)).join('')}…` : text;
}

function unique(lines: string[]): string[] {
  return lines.filter((l, i) => lines.indexOf(l) === i);
}

/**
 * A hint for a setup command that could not reach a registry: a refused TLS certificate (a
 * TLS-intercepting proxy), or no network at all. Undefined when the output shows neither.
 */
export function setupNetworkHint(output: string, network: boolean, passedNames: readonly string[]): string | undefined {
  if (/SELF_SIGNED_CERT|UNABLE_TO_(GET_ISSUER|VERIFY_LEAF)|CERT_HAS_EXPIRED|certificate verify failed|self[- ]signed certificate/i.test(output)) {
    const named = passedNames.filter((n) => /CA|CERT/.test(n));
    return named.length > 0
      ? `hint: a TLS certificate was refused although setup got ${named.join(', ')}: check that the file it names holds your proxy's CA.`
      : 'hint: a TLS certificate was refused, as behind a TLS-intercepting proxy. The jail starts from an empty environment: name the CA variable your tools need in the repo config, e.g. `setup_env: [NODE_EXTRA_CA_CERTS]` (npm, node), `SSL_CERT_FILE` or `REQUESTS_CA_BUNDLE` (pip), set on the host; the file it names is bound into setup.';
  }
  if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH|Could not resolve host|Temporary failure in name resolution|Network is unreachable/i.test(output)) {
    return network
      ? 'hint: setup could not reach the network. Behind a proxy, name its variables in the repo config: `setup_env: [HTTPS_PROXY, HTTP_PROXY, NO_PROXY]`.'
      : 'hint: setup has no network unless the repo config says `network: setup`.';
  }
  return undefined;
}

/** An attempt's result when the agent used up its model requests (max_turns); verification decides. */
export function turnLimitText(maxTurns: number): string {
  return `turn limit reached (${maxTurns} model requests)`;
}

/** Leads a failure with why the attempt stopped short, for the next attempt and for people. */
export function withTurnLimitNote(failure: string, attempt: number, maxTurns: number): string {
  return `Attempt ${attempt}: ${turnLimitText(maxTurns)} before it stopped calling tools. Work in fewer, larger steps. Why that attempt failed:\n\n${failure}`;
}
