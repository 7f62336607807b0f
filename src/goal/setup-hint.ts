import { setupNetworkHint } from './failure-summary.js';

/** Where the README explains each cause (the hint links it). */
export const README_URL = 'https://github.com/goal-loop/goal-loop#';
export const SETUP_README = {
  proxy: `${README_URL}setup-behind-a-corporate-proxy`,
  stalled: `${README_URL}setup-stalls-or-times-out`,
  lockfile: `${README_URL}setup-fails-on-an-out-of-date-lockfile`,
} as const;

/** `setup_stall_s` when the config has none: a setup stuck behind a proxy fails in under a minute. */
export const DEFAULT_SETUP_STALL_S = 45;

/** Host variables that say a proxy (or its CA) is in the way: set on the host, they should reach setup. */
export const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'NPM_CONFIG_PROXY', 'NPM_CONFIG_HTTPS_PROXY'];
export const CA_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO', 'NPM_CONFIG_CAFILE'];

/** What is known of a failed setup command besides its output. */
export interface SetupFailureContext {
  command: string;
  /** The repo config gives setup the network (`network: setup`). */
  network: boolean;
  /** The variables setup got (`setup_env`, after filtering). */
  passedNames: readonly string[];
  /** Proxy and CA variables set on the host that `setup_env` does not name. */
  unpassedHostNames: readonly string[];
  timedOut: boolean;
  stalled: boolean;
}

// An install that checks the lockfile against the manifest refused a stale one (pnpm, npm ci, yarn classic and berry).
const OUTDATED_LOCKFILE = [
  /ERR_PNPM_OUTDATED_LOCKFILE/,
  /ERR_PNPM_LOCKFILE_CONFIG_MISMATCH/,
  /can only install packages when your package\.json and (package-lock\.json|npm-shrinkwrap\.json)[\s\S]{0,80}in sync/,
  /Missing: \S+ from lock file/,
  /Your lockfile needs to be updated, but yarn was run with `--frozen-lockfile`/,
  /YN0028\b|The lockfile would have been modified by this install, which is explicitly forbidden/,
];

// The command installs packages from a registry (what needs the network).
const INSTALLS =
  /\b(npm|pnpm|yarn|bun)\s+(ci|i|install|add)\b|\b(npm|pnpm|yarn)\s*$|\bpip3?\s+install\b|\buv\s+(sync|pip)\b|\bpoetry\s+install\b|\bcargo\s+(fetch|build)\b|\bbundle(\s+install)?\b|\bcomposer\s+install\b|\bgo\s+mod\s+download\b/;

/**
 * The likely cause of a failed setup command, as a hint that names it and links the README: a
 * lockfile out of date, a TLS certificate refused (a TLS-intercepting proxy), no network or a
 * registry unreachable, or, for a stalled or timed-out install, the proxy variables the host has
 * and setup does not. Undefined when nothing points anywhere.
 */
export function setupFailureHint(output: string, c: SetupFailureContext): string | undefined {
  if (OUTDATED_LOCKFILE.some((re) => re.test(output))) {
    return `hint: the lockfile is out of date with package.json, and the install refuses to change it. Update the lockfile on the base branch (run the install locally and commit the lockfile). See ${SETUP_README.lockfile}`;
  }
  const network = setupNetworkHint(output, c.network, c.passedNames);
  if (network) return `${network} See ${c.network ? SETUP_README.proxy : SETUP_README.stalled}`;
  if (!c.stalled && !c.timedOut) return undefined;
  const how = c.stalled ? 'stalled' : 'timed out';
  if (!c.network && INSTALLS.test(c.command)) {
    return `hint: setup ${how} without the network: the repo config gives setup none unless it says \`network: setup\`, and an install waits on its registry. See ${SETUP_README.stalled}`;
  }
  const ca = caNamesFor(
    c.command,
    c.unpassedHostNames.filter((n) => CA_VARIABLES.includes(n)),
  );
  const proxy = c.unpassedHostNames.filter((n) => PROXY_VARIABLES.includes(n));
  if (ca.length > 0 || proxy.length > 0) {
    const names = [...proxy, ...ca];
    return `hint: setup ${how}, likely behind a proxy: ${names.join(', ')} ${names.length === 1 ? 'is' : 'are'} set here but not passed to setup (the jail starts from an empty environment), and a package manager that cannot pass a proxy or a TLS-intercepting one often retries silently. Add to the repo config: \`setup_env: [${names.join(', ')}]\`. See ${SETUP_README.proxy}`;
  }
  if (INSTALLS.test(c.command)) {
    return `hint: setup ${how} while installing: the registry is likely unreachable (a proxy, a firewall, or a TLS-intercepting proxy whose CA setup does not trust). Try the same install in a clean shell with only the variables \`setup_env\` names. See ${SETUP_README.stalled}`;
  }
  return `hint: setup ${how}. See ${SETUP_README.stalled}`;
}

// Which CA variables each kind of tool reads: the hint names those, not every bundle the host sets.
const CA_READERS: ReadonlyArray<readonly [RegExp, readonly string[]]> = [
  [/\b(npm|npx|pnpm|yarn|bun|corepack|node)\b/, ['NODE_EXTRA_CA_CERTS', 'NPM_CONFIG_CAFILE']],
  [/\b(pip3?|uv|poetry|python3?)\b/, ['REQUESTS_CA_BUNDLE', 'PIP_CERT', 'SSL_CERT_FILE']],
  [/\b(cargo|curl)\b/, ['CURL_CA_BUNDLE', 'SSL_CERT_FILE']],
  [/\bgit\b/, ['GIT_SSL_CAINFO']],
  [/\b(bundle|gem|composer|go)\b/, ['SSL_CERT_FILE']],
];

/** The CA variables among `names` that the command's tools read; all of them when it names no tool known here. */
function caNamesFor(command: string, names: readonly string[]): string[] {
  const read = new Set(CA_READERS.filter(([re]) => re.test(command)).flatMap(([, vars]) => vars));
  const relevant = names.filter((n) => read.has(n));
  return relevant.length > 0 ? relevant : [...names];
}

/** The proxy and CA variables set in `host` that `passed` does not name (for the hint). */
export function unpassedProxyNames(host: NodeJS.ProcessEnv, passed: readonly string[]): string[] {
  return [...PROXY_VARIABLES, ...CA_VARIABLES].filter((n) => host[n] && !passed.includes(n));
}
