/**
 * Variables an `mcp_servers` entry may never receive, whatever the repo config lists: the
 * bot's own credentials and settings (the config comes from the repository, which is
 * untrusted, and a server could write what it gets into a checkpoint), and what the jail sets.
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

export interface ServerEnv {
  env: Record<string, string>;
  /** Names refused by the rule above. */
  refused: string[];
  /** Names not set on the host. */
  missing: string[];
}

/** The host variables a server gets: exactly the names its config lists, minus the refused ones. */
export function serverEnv(names: readonly string[], host: NodeJS.ProcessEnv): ServerEnv {
  const out: ServerEnv = { env: {}, refused: [], missing: [] };
  for (const name of names) {
    if (NEVER.has(name) || name.startsWith('GOAL_LOOP_') || name.startsWith('GOAL_')) out.refused.push(name);
    else if (host[name] === undefined) out.missing.push(name);
    else out.env[name] = host[name]!;
  }
  return out;
}
