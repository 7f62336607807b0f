import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseRepoConfig } from '../src/config/repo-config.js';
import { createSampleRepo } from '../src/demo/sample-repo.js';
import type { BaselinePolicy } from '../src/goal/evidence.js';
import { loadGoalSpecFile } from '../src/goal/parse.js';
import type { GoalSpec } from '../src/goal/schema.js';
import { SqliteLedger } from '../src/ledger/sqlite/sqlite-ledger.js';
import { type Sandbox, SandboxUnavailableError } from '../src/ports/sandbox.js';
import { runConfiguredGoal } from '../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { selectSandbox } from '../src/sandbox/select-sandbox.js';
import { QuietForge } from './quiet-forge.js';
import { median, ms, printVerdicts, type Verdict } from './stats.js';

/** Runs of each setting; interleaved, so drift on a shared machine hits both alike. */
const RUNS = Number.parseInt(process.env.BENCH_BASELINE_RUNS ?? '', 10) || 5;
/** See baselineCost's comment. */
const TARGET = 1.5;
const DEMO_GOAL = fileURLToPath(new URL('../../examples/demo-goal.yml', import.meta.url));

const silent = pino({ level: 'silent' });

/**
 * What red before green (DESIGN.md §10) costs a goal: the wall time of the demo goal
 * (examples/demo-goal.yml on a fresh sample repository, run steps only, no agent) with
 * `verification_baseline: warn` (the default) against `off`, in the bwrap jail where it can run.
 * Printed with it: the baseline entries' own time in the attempt record, so what the loop adds
 * around them (the tree lookup, the changed-files check, the record) shows as the remainder.
 *
 * Target: at most 1.5x. The baseline is one more verification per task, before its first attempt
 * only: 4 in the demo, on top of what a run already pays: 5 verifications (4 tasks and
 * slug-tests' retry), 5 run steps, each command in a jail of its own, the clone, and 4
 * checkpoints and pushes. The verifications start Node (one the test runner), so they are the
 * dearer commands, but not most of the run: 4 more of them should add roughly 25-40%. 1.5x
 * leaves room for a shared machine's noise while still catching a baseline that runs more often
 * than once per task (on a retry, or again on a tree it already ran on) or that costs much more
 * than the verification it runs.
 */
export async function baselineCost(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-baseline-'));
  const sandbox = await jailOrProcess();
  try {
    const spec = await loadGoalSpecFile(DEMO_GOAL);
    process.stdout.write(`baseline cost: the demo goal (${spec.tasks.length} tasks, run steps only), ${RUNS} runs each of baseline warn and off, interleaved, sandbox ${sandbox.kind}\n`);

    // Not timed: the first goal of the process pays for loading modules and warming git.
    await runDemoGoal(join(root, 'warm-up'), spec, sandbox, 'off');
    const on: Measure[] = [];
    const off: Measure[] = [];
    for (let i = 0; i < RUNS; i++) {
      // The order alternates too: neither setting always runs right after the other.
      const order: BaselinePolicy[] = i % 2 === 0 ? ['warn', 'off'] : ['off', 'warn'];
      for (const policy of order) {
        const m = await runDemoGoal(join(root, `${policy}-${i}`), spec, sandbox, policy);
        (policy === 'off' ? off : on).push(m);
      }
    }

    const onMedian = median(on.map((m) => m.wallMs));
    const offMedian = median(off.map((m) => m.wallMs));
    const shareMedian = median(on.map((m) => m.baselineMs));
    const ratio = onMedian / offMedian;
    // Per round (a warn run and the off run next to it), for the record: the pairing cancels drift.
    const paired = on.map((m, i) => m.wallMs / off[i]!.wallMs);
    const rest = on.map((m, i) => m.wallMs - off[i]!.wallMs - m.baselineMs);
    const list = (xs: Measure[], f: (m: Measure) => number) => xs.map((m) => ms(f(m))).join(', ');
    process.stdout.write(
      `  baseline warn   median ${ms(onMedian).padStart(10)}  (${list(on, (m) => m.wallMs)})\n` +
        `  baseline off    median ${ms(offMedian).padStart(10)}  (${list(off, (m) => m.wallMs)})\n` +
        `  ratio           ${ratio.toFixed(2)}x  (+${ms(onMedian - offMedian)}); per round ${paired.map((r) => `${r.toFixed(2)}x`).join(', ')}\n` +
        `  baseline share  median ${ms(shareMedian).padStart(10)}  (${list(on, (m) => m.baselineMs)}; ${on[0]!.baselines} baselines a run, their durationMs in the attempt record), ${((100 * shareMedian) / onMedian).toFixed(0)}% of the run\n` +
        `  the rest        median ${ms(median(rest)).padStart(10)}  per round, warn - off - share: the baselines' cost beyond their commands' own time (the jail's set-up and tear-down, the tree lookup, the changed-files check, the loop's step and record) plus noise\n` +
        `  for scale       median ${ms(median(off.map((m) => m.verifyMs))).padStart(10)}  the verifications after the attempts (${off[0]!.verifications} a run, baseline off)\n`,
    );
    return [{ name: 'baseline cost', pass: ratio <= TARGET, detail: `${ratio.toFixed(2)}x the demo goal's wall time with baseline warn vs off (target <= ${TARGET}x)` }];
  } finally {
    // Each goal's resident jail waits for its next command: ended here, not left to the lines after.
    await sandbox.dispose?.();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The jail, as the demo uses it; the process sandbox only where bubblewrap cannot run here. */
async function jailOrProcess(): Promise<Sandbox> {
  try {
    return await selectSandbox({ mode: 'bwrap', logger: silent });
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    process.stdout.write(`  bwrap is not usable here (${err.message.split('\n')[0]}): the process sandbox instead\n`);
    return new ProcessSandbox();
  }
}

interface Measure {
  /** runConfiguredGoal's start to its end: clone, every task, checkpoints and pushes. */
  wallMs: number;
  /** The baselines' own durationMs (reused ones left out: they did not run). */
  baselineMs: number;
  baselines: number;
  /** The verifications' own durationMs after the attempts, for scale: a baseline runs the same commands. */
  verifyMs: number;
  verifications: number;
}

/** One run of the demo goal on a fresh sample repository and ledger, checked before it counts. */
async function runDemoGoal(dir: string, spec: GoalSpec, sandbox: Sandbox, policy: BaselinePolicy): Promise<Measure> {
  const repo = await createSampleRepo(join(dir, 'sample'));
  const ledger = new SqliteLedger(join(dir, 'ledger.db'));
  try {
    const config = parseRepoConfig({ verification_baseline: policy });
    const t0 = performance.now();
    const result = await runConfiguredGoal({ repo: repo.bare, spec, config, ledger, workspace: { remote: repo.bare, dir: join(dir, 'ws') }, sandbox, forge: new QuietForge(), logger: silent });
    const wallMs = performance.now() - t0;
    if (result.status !== 'LOOP_COMPLETE') throw new Error(`the demo goal (baseline ${policy}) ended ${result.status}: ${result.stop_reason}`);

    const entries = await ledger.listAttemptEntries({ repo: repo.bare, goalId: spec.goal_id });
    const ran = entries.flatMap((e) => (e.entry.kind === 'baseline' && !e.entry.reused ? [e.entry] : []));
    // The thing measured is the thing claimed: a baseline per task when on, red before each
    // checkpoint's green; none when off.
    const expected = policy === 'off' ? 'unchecked' : 'red->green';
    const verified = execFileSync('git', ['--git-dir', repo.bare, 'log', '--format=%(trailers:key=Goal-Verified,valueonly)', `main..goal/${spec.goal_id}`], { encoding: 'utf8' })
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (verified.length !== spec.tasks.length || verified.some((v) => v !== expected)) {
      throw new Error(`baseline ${policy}: the checkpoints say Goal-Verified ${JSON.stringify(verified)}, expected ${spec.tasks.length}x ${expected}`);
    }
    const baselines = entries.filter((e) => e.entry.kind === 'baseline').length;
    if (baselines !== (policy === 'off' ? 0 : spec.tasks.length)) throw new Error(`baseline ${policy}: ${baselines} baseline entries in the attempt record for ${spec.tasks.length} tasks`);
    const verifies = entries.flatMap((e) => (e.entry.kind === 'verify' ? [e.entry] : []));
    const sum = (xs: { durationMs: number }[]) => xs.reduce((total, x) => total + x.durationMs, 0);
    return { wallMs, baselineMs: sum(ran), baselines: ran.length, verifyMs: sum(verifies), verifications: verifies.length };
  } finally {
    await ledger.close();
  }
}

// Run alone: `node dist/bench/baseline-cost.js` after `tsc -p tsconfig.bench.json`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  void baselineCost().then((verdicts) => {
    printVerdicts(verdicts);
    process.exitCode = verdicts.every((v) => v.pass) ? 0 : 1;
  });
}
