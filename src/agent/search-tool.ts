import { spawn } from 'node:child_process';
import { relative } from 'node:path';
import type { ToolInput } from './tool-catalog.js';
import { bounded, ToolError, type ToolEnv, type ToolOutcome } from './tool-results.js';

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

/** Runs a helper program (ripgrep) with a clean environment, bounded output and a timeout. */
function runBounded(program: string, args: string[], cwd: string, maxBytes: number, timeoutMs: number, signal: AbortSignal): Promise<BoundedRun> {
  return new Promise((resolve) => {
    const child = spawn(program, args, { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let cut = false;
    const stop = () => child.kill('SIGKILL');
    const timer = setTimeout(() => {
      cut = true;
      stop();
    }, timeoutMs);
    signal.addEventListener('abort', stop, { once: true });
    child.stdout.on('data', (c: Buffer) => {
      if (cut) return;
      if (bytes + c.length > maxBytes) {
        out.push(c.subarray(0, maxBytes - bytes));
        bytes = maxBytes;
        cut = true;
        stop();
        return;
      }
      out.push(c);
      bytes += c.length;
    });
    child.stderr.on('data', (c: Buffer) => {
      if (err.reduce((n, b) => n + b.length, 0) < 64 * 1024) err.push(c);
    });
    const done = (r: BoundedRun) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve(r);
    };
    child.on('error', (e: NodeJS.ErrnoException) => done({ code: null, stdout: '', stderr: e.message, cut: false, notFound: e.code === 'ENOENT' }));
    child.on('close', (code) => {
      let stdout = Buffer.concat(out).toString('utf8');
      if (cut) stdout = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
      done({ code, stdout, stderr: Buffer.concat(err).toString('utf8'), cut, notFound: false });
    });
  });
}
