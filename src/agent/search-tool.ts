import { relative } from 'node:path';
import { execa } from 'execa';
import type { ToolInput } from './tool-catalog.js';
import { bounded, type ToolEnv, ToolError, type ToolOutcome } from './tool-results.js';

/** The search tool: ripgrep on the host, over the confined workspace. */

export async function search(t: ToolEnv, input: ToolInput<'search'>): Promise<ToolOutcome> {
  const path = input.path?.trim() || '.';
  const real = await t.ctx.files.resolveExisting(path, true);
  const target = relative(t.ctx.files.root, real) || '.';
  const args = [
    '--no-config',
    '--line-number',
    '--no-heading',
    '--with-filename',
    '--color=never',
    '--hidden',
    '--iglob=!.git',
    '--max-columns=300',
    '--max-columns-preview',
    '--max-filesize=1M',
    '--max-count=100',
    `--regexp=${input.pattern}`,
    '--',
    target,
  ];
  const r = await runBounded(t.ctx.rgPath ?? 'rg', args, t.ctx.files.root, t.limits.searchMaxBytes, t.limits.searchTimeoutMs, t.ctx.signal);
  if (r.notFound) throw new ToolError('search is unavailable: ripgrep (rg) is not installed on this host; use run_command with grep instead');
  if (r.code === 1 && !r.stdout) return { content: `no matches for /${input.pattern}/ in ${path}`, isError: false, summary: `search /${input.pattern}/ in ${path} → no matches` };
  if (r.code !== 0 && r.code !== 1 && !r.cut) throw new ToolError(`search failed: ${r.stderr.trim() || `rg exited with ${r.code}`}`);
  const matches = r.stdout ? r.stdout.replace(/\n$/, '').split('\n').length : 0;
  const body = `${matches} matching lines${r.cut ? ' (output stopped: too many matches; narrow the pattern or the path)' : ''}\n${r.stdout}`;
  return { content: await bounded(t, 'search', body), isError: false, summary: `search /${input.pattern}/ in ${path} → ${matches} lines` };
}

interface BoundedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  cut: boolean;
  notFound: boolean;
}

/** stderr kept at most (ripgrep's complaints about unreadable files); a flood of it stops rg too. */
const STDERR_KEPT = 64 * 1024;

/**
 * Runs a host helper program (ripgrep) through execa: only the environment given (extendEnv off),
 * stdout capped at `maxBytes` and stopped past it, killed (SIGKILL) at the timeout or on abort.
 */
async function runBounded(program: string, args: string[], cwd: string, maxBytes: number, timeoutMs: number, signal: AbortSignal): Promise<BoundedRun> {
  const r = await execa(program, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    extendEnv: false,
    stdin: 'ignore',
    encoding: 'buffer',
    maxBuffer: { stdout: maxBytes, stderr: 16 * STDERR_KEPT },
    stripFinalNewline: false,
    timeout: timeoutMs,
    cancelSignal: signal,
    killSignal: 'SIGKILL',
    reject: false,
  });
  if (r.failed && 'code' in r && r.code === 'ENOENT' && r.exitCode === undefined) {
    return { code: null, stdout: '', stderr: r.shortMessage ?? 'not found', cut: false, notFound: true };
  }
  const cut = r.timedOut || r.isMaxBuffer;
  let stdout = Buffer.from(r.stdout ?? new Uint8Array()).toString('utf8');
  if (cut) stdout = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
  const stderr = Buffer.from(r.stderr ?? new Uint8Array())
    .subarray(0, STDERR_KEPT)
    .toString('utf8');
  return { code: r.exitCode ?? null, stdout, stderr, cut, notFound: false };
}
