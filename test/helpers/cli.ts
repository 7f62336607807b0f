import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './build.js';

/** The built CLI: a test file that imports this (itself or through a helper) has dist/ built first. */
export const CLI = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));

await ensureBuilt();

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts `goal-loop` as a real process. */
export function startCli(args: string[], env: Record<string, string> = {}, cwd?: string): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, LOG_LEVEL: 'warn', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export function runCli(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<CliResult> {
  return startCli(args, env, cwd).done;
}
