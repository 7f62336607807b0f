import { availableParallelism } from 'node:os';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import type { JailLimits } from './bwrap-sandbox.js';
import { realOrUndefined } from './jail-host.js';
import { clampLimits, type LimitSetting, ownHardLimits } from './rlimits.js';
import { findProgram } from './toolchain.js';

// How a jail is launched from the host: the programs it needs, the launcher's environment and
// script, and the resource limits the launcher sets.

/** The launcher's resource limits (soft, hard) for a command of this timeout. */
export function launchLimits(limits: JailLimits, timeoutMs: number): LimitSetting[] {
  const cores = availableParallelism();
  const cpu = limits.cpuSeconds ?? Math.max(1, Math.ceil(timeoutMs / 1000)) * cores;
  const nproc = limits.maxProcesses;
  const fsize = Math.max(1, Math.ceil(limits.maxFileBytes / 1024));
  const nofile = limits.maxOpenFiles;
  // Read now, not at construction: the launcher inherits the bot's limits as they are at spawn.
  return clampLimits(
    [
      { flag: '-u', soft: nproc, hard: nproc },
      { flag: '-f', soft: fsize, hard: fsize },
      // CPU: SIGXCPU at the soft limit ("CPU time limit exceeded"), SIGKILL 10 s later.
      { flag: '-t', soft: cpu, hard: cpu + 10 },
      { flag: '-n', soft: nofile, hard: nofile },
      { flag: '-c', soft: 0, hard: 0 },
    ],
    ownHardLimits(),
  );
}

/** A system program the jail runs from /usr (the jail sees the host's /usr only). */
export function systemProgram(name: string, pkg: string, why: string): string {
  const found = findProgram(name);
  const real = found && realOrUndefined(found);
  if (!real) throw new SandboxUnavailableError(`${name} (${pkg}) not found: the jail needs it ${why}. Fix: \`apt-get install ${pkg}\``);
  if (!real.startsWith('/usr/')) throw new SandboxUnavailableError(`${name} resolves to ${real}, outside /usr: the jail sees only /usr and the toolchain`);
  return real;
}

export const LAUNCH_ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' };

/**
 * Runs on the host (as root in `nested` mode) before bwrap: closes inherited descriptors, sets
 * the resource limits (hard and soft, never above what the bot itself has), joins the command's
 * cgroups, merges stderr into stdout, then becomes bwrap.
 */
export const LAUNCHER = `set -u
# No descriptor the bot inherited from its own parent may reach the jail.
for fd in /proc/$$/fd/*; do
  fd=\${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
# The limits (soft, hard pairs for -u -f -t -n -c), computed by the bot never above its own
# hard limits: builtins only, no subshell per limit.
ulimit -S -u "$1" && ulimit -H -u "$2" && ulimit -S -f "$3" && ulimit -H -f "$4" && ulimit -S -t "$5" && ulimit -H -t "$6" &&
  ulimit -S -n "$7" && ulimit -H -n "$8" && ulimit -S -c "$9" && ulimit -H -c "\${10}" ||
  { echo "goal-loop: cannot set the resource limits" >&2; exit 125; }
merge=\${11} n=\${12}
shift 12
while [ "$n" -gt 0 ]; do
  echo $$ > "$1" || { echo "goal-loop: cannot join the cgroup $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
# Captured commands get stderr in stdout; a long-lived process (MCP server) keeps them apart.
if [ "$merge" = 1 ]; then exec "$@" 2>&1; else exec "$@"; fi`;

/** A limit as `ulimit` takes it. */
export function limitText(n: number): string {
  return Number.isFinite(n) ? String(Math.floor(n)) : 'unlimited';
}
