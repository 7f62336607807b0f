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
import type { Verdict } from './stats.js';
import { throughput } from './throughput.js';
import { webhookLatency } from './webhook-latency.js';
import { workspacePrep } from './workspace-prep.js';
import { writeBudgetBurst } from './write-budget-burst.js';

/** The jail (the default sandbox) against raw git, or a note that this host cannot start one. */
async function checkpointOverheadJail(): Promise<Verdict[]> {
  const jail = await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) }).catch(() => undefined);
  if (!jail) {
    process.stdout.write('checkpoint overhead in the bwrap jail: skipped, bubblewrap is not usable here\n');
    return [];
  }
  try {
    return await checkpointOverhead(jail, { target: 1.5 });
  } finally {
    await jail.dispose?.();
  }
}

/** Every line of `npm run bench`, in the order it runs them; each runs in a process of its own. */
export const BENCH_LINES: Record<string, () => Promise<Verdict[]>> = {
  // The harness's own overhead, then with the jail (the default), each against raw git.
  'checkpoint-process': () => checkpointOverhead(new ProcessSandbox(), { target: 1.3 }),
  'checkpoint-bwrap': checkpointOverheadJail,
  'push-delay': pushDelay,
  'baseline-cost': baselineCost,
  webhook: webhookLatency,
  'action-start': actionStart,
  context: contextBench,
  'workspace-prep': workspacePrep,
  'setup-cache': setupCacheBench,
  throughput,
  convergence,
  'write-budget': writeBudgetBurst,
  'follow-base': followBaseBench,
};
