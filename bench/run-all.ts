import { pino } from 'pino';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { selectSandbox } from '../src/sandbox/select-sandbox.js';
import { actionStart } from './action-start.js';
import { baselineCost } from './baseline-cost.js';
import { checkpointOverhead } from './checkpoint-overhead.js';
import { contextBench } from './context-bench.js';
import { convergence } from './convergence.js';
import { followBaseBench } from './follow-base.js';
import { pushDelay } from './push-delay.js';
import { setupCacheBench } from './setup-cache.js';
import { printVerdicts, type Verdict } from './stats.js';
import { throughput } from './throughput.js';
import { webhookLatency } from './webhook-latency.js';
import { workspacePrep } from './workspace-prep.js';
import { writeBudgetBurst } from './write-budget-burst.js';

/** `npm run bench`: every benchmark, each with its own baseline measured in the same run. */
async function main(): Promise<number> {
  const verdicts: Verdict[] = [];
  // The harness's own overhead, then with the jail (the default), each against raw git.
  verdicts.push(...(await checkpointOverhead(new ProcessSandbox(), { target: 1.3 })));
  process.stdout.write('\n');
  const jail = await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) }).catch(() => undefined);
  if (jail) {
    verdicts.push(...(await checkpointOverhead(jail, { target: 1.5 })));
    await jail.dispose?.();
  } else process.stdout.write('checkpoint overhead in the bwrap jail: skipped, bubblewrap is not usable here\n');
  process.stdout.write('\n');
  verdicts.push(...(await pushDelay()));
  process.stdout.write('\n');
  verdicts.push(...(await baselineCost()));
  process.stdout.write('\n');
  verdicts.push(...(await webhookLatency()));
  process.stdout.write('\n');
  verdicts.push(...(await actionStart()));
  process.stdout.write('\n');
  verdicts.push(...(await contextBench()));
  process.stdout.write('\n');
  verdicts.push(...(await workspacePrep()));
  process.stdout.write('\n');
  verdicts.push(...(await setupCacheBench()));
  process.stdout.write('\n');
  verdicts.push(...(await throughput()));
  process.stdout.write('\n');
  verdicts.push(...(await convergence()));
  process.stdout.write('\n');
  verdicts.push(...(await writeBudgetBurst()));
  process.stdout.write('\n');
  verdicts.push(...(await followBaseBench()));
  process.stdout.write('\nsummary\n');
  printVerdicts(verdicts);
  return verdicts.every((v) => v.pass) ? 0 : 1;
}

// The script's only work: its outcome is the exit code, and an error ends it as unhandled.
void main().then((code) => {
  process.exitCode = code;
});
