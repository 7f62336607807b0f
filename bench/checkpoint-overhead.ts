import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { parseRepoConfig } from '../src/config/repo-config.js';
import { validateGoalSpec } from '../src/goal/parse.js';
import type { GoalSnapshot, LoopResult } from '../src/goal/result.js';
import { SqliteLedger } from '../src/ledger/sqlite/sqlite-ledger.js';
import type { Forge } from '../src/ports/forge.js';
import type { Sandbox } from '../src/ports/sandbox.js';
import { runConfiguredGoal } from '../src/run/run-configured-goal.js';
import { GitWorkspace } from '../src/workspace/git-workspace.js';
import { makeBareRepo, sh } from './bench-repo.js';
import { median, ms, type Verdict } from './stats.js';
import { TimeSpent } from './where-time-goes.js';

const FILES = 2000;
const TASKS = 25;

/** Harness overhead per checkpoint vs raw `git add -A && git commit && git push`, same repo, same run. */
export async function checkpointOverhead(sandbox: Sandbox, opts: { informational?: boolean; target?: number } = {}): Promise<Verdict[]> {
  const target = opts.target ?? 1.3;
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-'));
  try {
    const bare = makeRepo(root);
    process.stdout.write(`checkpoint overhead: ${FILES}-file repository, ${TASKS} tasks, sandbox ${sandbox.kind}\n`);

    // Baseline: the same kind of change, committed and pushed with plain git; half before the
    // goal and half after it, so that a machine growing busier or quieter meanwhile weighs on both.
    const raw = join(root, 'raw');
    sh(root, 'git', 'clone', '-q', bare, raw);
    const rawTimes: number[] = [];
    let rawRound = 0;
    const rawLoop = (n: number) => {
      for (let k = 0; k < n; k++, rawRound++) {
        const i = rawRound;
        appendFileSync(join(raw, `src/d${i % 40}/f${i % FILES}.txt`), `change ${i}\n`);
        const t0 = performance.now();
        sh(raw, 'git', 'add', '-A');
        sh(raw, 'git', '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', `raw ${i}`);
        sh(raw, 'git', 'push', '-q', 'origin', 'HEAD:refs/heads/raw');
        rawTimes.push(performance.now() - t0);
      }
    };
    rawLoop(TASKS);

    // goal-loop: a goal of TASKS tasks, each a run step + verification + checkpoint + push.
    const spec = validateGoalSpec({
      goal_id: 'bench',
      objective: 'benchmark',
      tasks: Array.from({ length: TASKS }, (_, i) => ({
        id: `t${i}`,
        title: `change ${i}`,
        run: `echo "change ${i}" >> src/d${i % 40}/f${i}.txt`,
        verification: `test -s src/d${i % 40}/f${i}.txt`,
        ...(i > 0 ? { dependencies: [`t${i - 1}`] } : {}),
      })),
    });
    const spent = new TimeSpent();
    const ledger = spent.wrap(new SqliteLedger(join(root, 'ledger.db')), 'ledger');
    const stamps: number[] = [];
    const forge = new TimingForge(stamps);
    const workspace = spent.wrap(
      new GitWorkspace({
        remote: bare,
        dir: join(root, 'ws'),
        goalId: 'bench',
        branch: 'goal/bench',
        protectedPaths: ['.github/workflows/**'],
        identity: { name: 'goal-loop', email: 'b@b' },
      }),
      'workspace',
    );
    // No baseline: it would run each task's verification a second time, which raw git has no counterpart of.
    const config = parseRepoConfig({ verification_baseline: 'off' });
    spent.timeGit();
    let result: LoopResult;
    try {
      result = await runConfiguredGoal({ repo: bare, spec, config, ledger, workspace, sandbox: spent.wrap(sandbox, 'sandbox'), forge, logger: pino({ level: 'silent' }) });
    } finally {
      spent.stop();
    }
    await ledger.close();
    rawLoop(TASKS);
    if (result.status !== 'LOOP_COMPLETE') throw new Error(`bench goal ended ${result.status}: ${result.stop_reason}`);
    // Reports follow the pushes, and checkpoints queued behind a push go in the next one together:
    // the time per task is the span from the first report to the last, over the tasks in it.
    const oursPerTask = (stamps.at(-1)! - stamps[0]!) / (stamps.length - 1);

    // Ours is a mean (a span over the tasks), so the raw side's is its mean too: the same statistic
    // on both sides, each with its own slow rounds.
    const rawMean = rawTimes.reduce((a, b) => a + b, 0) / rawTimes.length;
    const ratio = oursPerTask / rawMean;
    process.stdout.write(
      `  raw git add+commit+push   mean   ${ms(rawMean)}  (median ${ms(median(rawTimes))}, slowest ${ms(Math.max(...rawTimes))})\n` +
        `  goal-loop per task        mean   ${ms(oursPerTask)}  (run step, verification, commit, ledger; the push from the outbox meanwhile)\n` +
        `  ratio                     ${ratio.toFixed(2)}x\n` +
        `  where a task's time goes (whole goal ÷ ${TASKS}; a port call's time includes the git commands it ran):\n${spent.report(TASKS)}\n`,
    );
    if (opts.informational) return [];
    return [{ name: `checkpoint overhead (${sandbox.kind})`, pass: ratio < target, detail: `${ratio.toFixed(2)}x raw git per task (target < ${target}x)` }];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

class TimingForge implements Forge {
  constructor(private readonly stamps: number[]) {}
  async update(): Promise<void> {
    // not measured: nothing to report
  }
  async checkpointed(): Promise<void> {
    this.stamps.push(performance.now());
  }
  async requestApproval(): Promise<void> {
    // not measured: nothing to report
  }
  async escalate(): Promise<void> {
    // not measured: nothing to report
  }
  async finished(_r: LoopResult, _s: GoalSnapshot): Promise<void> {
    // not measured: nothing to report
  }
}

function makeRepo(root: string): string {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`src/d${i % 40}/f${i}.txt`] = `file ${i}\n${'x'.repeat(200)}\n`;
  return makeBareRepo(root, files);
}

export { printVerdicts } from './stats.js';
