/**
 * Which host variables the repo config may pass into the sandbox (`mcp_servers[].env`,
 * `setup_env`). The config comes from the repository, which is untrusted, and a command could
 * write what it gets into a checkpoint; so whatever it lists, never the bot's own credentials and
 * settings (Probot's manifest flow puts GITHUB_CLIENT_SECRET and WEBHOOK_PROXY_URL into .env, PG*
 * reach the store), never a name that looks like a secret (a cloud or registry credential of the
 * host), and never what the jail sets. A deny-list by pattern: the proxy, registry and CA bundle
 * variables the README documents match none of them.
 */
const BOT_NAMES = new Set(['APP_ID', 'DATABASE_URL', 'PRIVATE_KEY', 'PRIVATE_KEY_PATH', 'WEBHOOK_SECRET', 'GITHUB_TOKEN', 'GH_TOKEN']);
const BOT_PREFIXES = ['GITHUB_', 'GH_', 'WEBHOOK_', 'PG', 'ANTHROPIC_', 'GOAL_LOOP_', 'GOAL_', 'PRIVATE_KEY'];
const JAIL_NAMES = new Set(['PATH', 'HOME', 'TMPDIR']);
/** AUTH but not AUTHOR (GIT_AUTHOR_NAME is no secret). */
const SECRET_LIKE = /SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|KEY|CREDENTIAL|AUTH(?!OR)|PRIVATE|COOKIE/i;

export interface HostEnv {
  env: Record<string, string>;
  /** Names refused by the rules above, in the order listed. */
  refused: string[];
  /** Why each refused name was refused (for the warning that names them). */
  why: Record<string, string>;
  /** Names not set on the host. */
  missing: string[];
}

/** Why `name` may never enter the sandbox, or undefined when it may. */
function refusalOf(name: string): string | undefined {
  const upper = name.toUpperCase();
  if (JAIL_NAMES.has(upper)) return 'the jail sets it itself';
  if (BOT_NAMES.has(upper) || BOT_PREFIXES.some((p) => upper.startsWith(p))) return "the bot's own credentials and settings use this name";
  if (SECRET_LIKE.test(name)) return 'the name looks like a secret (SECRET, TOKEN, PASSWORD, KEY, CREDENTIAL, AUTH…)';
  return undefined;
}

/** The host variables a sandboxed process gets: exactly the names the config lists, minus the refused ones. */
export function hostEnv(names: readonly string[], host: NodeJS.ProcessEnv): HostEnv {
  const out: HostEnv = { env: {}, refused: [], why: {}, missing: [] };
  for (const name of names) {
    const why = refusalOf(name);
    if (why) {
      out.refused.push(name);
      out.why[name] = why;
    } else if (host[name] === undefined) out.missing.push(name);
    else out.env[name] = host[name]!;
  }
  return out;
}
