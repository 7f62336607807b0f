import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BENCH_LINES } from './bench-lines.js';
import { printVerdicts, type Verdict } from './stats.js';

const RUN_LINE = fileURLToPath(new URL('./run-line.js', import.meta.url));

/**
 * One line in a Node process of its own, as `goal-loop run` and `serve` each are: what a line
 * leaves behind (its heap, its threads, a server not yet closed, a jail still resident) never
 * weighs on the lines after it. Its output streams through; its verdicts come back over IPC.
 */
function runLine(name: string): Promise<Verdict[]> {
  return new Promise((resolve) => {
    const child = fork(RUN_LINE, [name], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let verdicts: Verdict[] | undefined;
    child.on('message', (message) => (verdicts = message as Verdict[]));
    child.on('exit', (code, signal) => {
      resolve(verdicts ?? [{ name, pass: false, detail: `the line ended without a verdict (${signal ?? `exit ${code}`})` }]);
    });
  });
}

/** `npm run bench [line ...]`: every benchmark (or the ones named), each with its own baseline measured in the same run. */
async function main(): Promise<number> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(name in BENCH_LINES));
  if (unknown.length > 0) {
    process.stderr.write(`npm run bench: no line ${unknown.join(', ')}; the lines: ${Object.keys(BENCH_LINES).join(', ')}\n`);
    return 2;
  }
  const verdicts: Verdict[] = [];
  for (const name of asked.length > 0 ? asked : Object.keys(BENCH_LINES)) {
    verdicts.push(...(await runLine(name)));
    process.stdout.write('\n');
  }
  process.stdout.write('summary\n');
  printVerdicts(verdicts);
  return verdicts.every((v) => v.pass) ? 0 : 1;
}

// The script's only work: its outcome is the exit code, and an error ends it as unhandled.
void main().then((code) => {
  process.exitCode = code;
});
