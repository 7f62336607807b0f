import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Verdict } from './stats.js';

/**
 * Runs one benchmark alone in a fresh Node process (its output on ours), for a figure that what
 * earlier benchmarks left in this one (heap, compiled code, timers, child processes) could sway.
 */
export function runIsolated(module: string, name: string): Promise<Verdict[]> {
  const child = fork(fileURLToPath(import.meta.url), [new URL(module, import.meta.url).href, name], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    let verdicts: Verdict[] | undefined;
    child.once('message', (m) => {
      verdicts = m as Verdict[];
    });
    child.once('error', reject);
    child.once('exit', (code) => (verdicts && code === 0 ? resolve(verdicts) : reject(new Error(`${name} ended with ${code} and no verdicts`))));
  });
}

// As the child: run the named benchmark, send its verdicts to the parent, and end.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const [module, name] = process.argv.slice(2);
  const run = (await import(module!))[name!] as () => Promise<Verdict[]>;
  const verdicts = await run();
  await new Promise<void>((resolve) => process.send!(verdicts, () => resolve()));
  process.disconnect();
}
