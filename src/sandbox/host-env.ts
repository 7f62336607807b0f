/**
 * Variables the repo config may never pass into the sandbox (`mcp_servers[].env`, `setup_env`),
 * whatever it lists: the bot's own credentials and settings (the config comes from the
 * repository, which is untrusted, and a command could write what it gets into a checkpoint),
 * and what the jail sets.
 */
const NEVER = new Set([
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_BASE_URL',
  'APP_ID',
  'PRIVATE_KEY',
  'PRIVATE_KEY_PATH',
  'WEBHOOK_SECRET',
  'GITHUB_TOKEN',
  'GH_TOKEN',
  'DATABASE_URL',
  'PATH',
  'HOME',
  'TMPDIR',
]);

export interface HostEnv {
  env: Record<string, string>;
  /** Names refused by the rule above. */
  refused: string[];
  /** Names not set on the host. */
  missing: string[];
}

/** The host variables a sandboxed process gets: exactly the names the config lists, minus the refused ones. */
export function hostEnv(names: readonly string[], host: NodeJS.ProcessEnv): HostEnv {
  const out: HostEnv = { env: {}, refused: [], missing: [] };
  for (const name of names) {
    if (NEVER.has(name) || name.startsWith('GOAL_LOOP_') || name.startsWith('GOAL_')) out.refused.push(name);
    else if (host[name] === undefined) out.missing.push(name);
    else out.env[name] = host[name]!;
  }
  return out;
}
