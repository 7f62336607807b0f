import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { checkpointOverhead } from './checkpoint-overhead.js';
import { webhookLatency } from './webhook-latency.js';
import { printVerdicts, type Verdict } from './stats.js';

/** `npm run bench`: every benchmark, each with its own baseline measured in the same run. */
async function main(): Promise<number> {
  const verdicts: Verdict[] = [];
  verdicts.push(...(await checkpointOverhead(new ProcessSandbox())));
  process.stdout.write('\n');
  verdicts.push(...(await webhookLatency()));
  process.stdout.write('\nsummary\n');
  printVerdicts(verdicts);
  return verdicts.every((v) => v.pass) ? 0 : 1;
}

main().then((code) => {
  process.exitCode = code;
});
