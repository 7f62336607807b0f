import { readFileSync } from 'node:fs';
import { START_MARKER } from './bwrap-args.js';
import type { OutputCapture } from './output-capture.js';
import type { Capture } from './run-captured.js';

/**
 * Passes output through once the jail printed its start marker (dropping the marker); anything
 * before it is bwrap's own diagnostics. `started` stays false when the command never ran.
 */
export class StartFilter implements Capture {
  started = false;
  private pending: Buffer | undefined = Buffer.alloc(0);
  private static readonly marker = Buffer.from(START_MARKER);
  private static readonly lookahead = 64 * 1024;

  constructor(private readonly inner: OutputCapture) {}

  write(chunk: Buffer): void {
    if (this.pending === undefined) {
      this.inner.write(chunk);
      return;
    }
    this.pending = Buffer.concat([this.pending, chunk]);
    const at = this.pending.indexOf(StartFilter.marker);
    if (at >= 0) {
      this.started = true;
      const before = this.pending.subarray(0, at);
      const after = this.pending.subarray(at + StartFilter.marker.length);
      this.pending = undefined;
      if (before.length > 0) this.inner.write(before);
      if (after.length > 0) this.inner.write(after);
    } else if (this.pending.length > StartFilter.lookahead) {
      const all = this.pending;
      this.pending = undefined;
      this.inner.write(all);
    }
  }

  close(): void {
    if (this.pending?.length) this.inner.write(this.pending);
    this.pending = undefined;
    this.inner.close();
  }

  text(): string {
    return this.inner.text();
  }

  get bytes(): number {
    return this.inner.bytes;
  }

  get truncated(): boolean {
    return this.inner.truncated;
  }

  get logPath(): string | undefined {
    return this.inner.logPath;
  }
}

/** Why bwrap could not start, and how to fix it, from its error message and the host's settings. */
export function explainJailFailure(output: string): { reason: string; fix: string } | undefined {
  const text = output.toLowerCase();
  const userns = readSysctl('/proc/sys/user/max_user_namespaces');
  const debianUserns = readSysctl('/proc/sys/kernel/unprivileged_userns_clone');
  const apparmor = readSysctl('/proc/sys/kernel/apparmor_restrict_unprivileged_userns');
  if (userns === '0' || /no space left on device/.test(text)) {
    return { reason: 'user namespaces are disabled (user.max_user_namespaces = 0)', fix: '`sysctl -w user.max_user_namespaces=15000` (and persist it in /etc/sysctl.d/)' };
  }
  if (/mount: \/dev\/pts|cannot turn off user namespaces/.test(text)) {
    return {
      reason: "the kernel refused the jail its own capped /dev/pts or its user-namespace limit (a devpts mount with max= and user.max_user_namespaces, both inside the jail's own user namespace)",
      fix: 'use a kernel of 4.9 or newer with user namespaces; in a container, run with `--security-opt systempaths=unconfined` (Docker) so that the jail\'s /proc/sys is its own; see README, "Sandbox and threat model"',
    };
  }
  const unreachable = /can't find source path ([^:\n]+): permission denied/i.exec(output);
  if (unreachable) {
    return {
      reason: `the jail's uid cannot reach ${unreachable[1]} (a parent directory is not traversable, e.g. a 0700 home)`,
      fix: 'keep the workspaces (GOAL_LOOP_WORKSPACES) and the toolchain under directories that user can traverse, or run the bot as root (the nested jail reaches any path)',
    };
  }
  if (/can't mount proc/.test(text)) {
    return {
      reason: 'the kernel refused a new /proc: the host /proc is partly masked (typical inside a container)',
      fix: 'run the container with `--security-opt systempaths=unconfined` (Docker) or `--security-opt unmask=ALL` (Podman); see README, "Sandbox and threat model"',
    };
  }
  if (/namespace|uid map|setting up uid|operation not permitted|permission denied/.test(text)) {
    if (debianUserns === '0') {
      return { reason: 'unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)', fix: '`sysctl -w kernel.unprivileged_userns_clone=1` (and persist it in /etc/sysctl.d/)' };
    }
    if (apparmor === '1') {
      return {
        reason: 'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)',
        fix: 'install an AppArmor profile that allows userns for /usr/bin/bwrap, or `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`',
      };
    }
    return {
      reason: 'the kernel or a security policy refused the namespaces bwrap needs (seccomp, AppArmor/SELinux, or a container without CAP_SYS_ADMIN)',
      fix: 'in Docker run with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined` (and `--cap-add SYS_ADMIN` when the bot runs as root), or run the bot as a non-root user; see README',
    };
  }
  return undefined;
}

function readSysctl(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
