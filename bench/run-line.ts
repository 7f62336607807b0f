import { BENCH_LINES } from './bench-lines.js';

// One line of `npm run bench`, in this process alone (started by run-all.ts): its verdicts go
// back over the IPC channel, and the process exits once they are sent, whatever the line left armed.
const name = process.argv[2] ?? '';
const line = BENCH_LINES[name];
if (!line || !process.send) {
  process.stderr.write(`run-line: no bench line "${name}" (or not started by run-all): ${Object.keys(BENCH_LINES).join(', ')}\n`);
  process.exit(2);
}
const verdicts = await line();
process.send(verdicts, () => process.exit(0));
