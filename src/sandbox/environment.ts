/** The only variables a sandboxed command sees (plus the caller's GOAL_* ones). */
export function sandboxEnvironment(opts: { path: string; home: string; extra?: Record<string, string> }): Record<string, string> {
  const env: Record<string, string> = {
    PATH: opts.path,
    HOME: opts.home,
    CI: '1',
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    // The host's pnpm runs every command: pnpm 10 would otherwise fetch the release a
    // `packageManager` field pins, which needs the network no task has (and npm ignores it).
    npm_config_manage_package_manager_versions: 'false',
  };
  for (const [k, v] of Object.entries(opts.extra ?? {})) {
    if (isAllowedExtra(k)) env[k] = v;
  }
  return env;
}

/** Callers may add GOAL_* variables only; anything else is dropped so secrets cannot leak in. */
export function isAllowedExtra(name: string): boolean {
  return /^GOAL_[A-Z0-9_]+$/.test(name);
}

/** A PATH built from the directories of the host's toolchain, never from the caller's env verbatim. */
export const DEFAULT_SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
