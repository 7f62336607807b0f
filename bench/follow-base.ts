import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { parseRepoConfig } from '../src/config/repo-config.js';
import type { BaseFollowedReport } from '../src/goal/base-followed.js';
import { validateGoalSpec } from '../src/goal/parse.js';
import type { GoalSpec } from '../src/goal/schema.js';
import { SqliteLedger } from '../src/ledger/sqlite/sqlite-ledger.js';
import type { Ledger } from '../src/ports/ledger.js';
import type { Sandbox } from '../src/ports/sandbox.js';
import type { Workspace } from '../src/ports/workspace.js';
import { goalWorkspace } from '../src/run/compose-goal-run.js';
import { runConfiguredGoal } from '../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { makeBareRepo, sh } from './bench-repo.js';
import { QuietForge } from './quiet-forge.js';
import { median, ms, type Verdict } from './stats.js';
import { TimeSpent } from './where-time-goes.js';

const FILES = 300;
const TASKS = 10;
const ROUNDS = 5;
/**
 * goal-loop's whole run against the least a person types. The run does more, and must: it fetches
 * and resets its clone (prepare), reads each checkpoint's trailers and cherry-picks one commit at
 * a time (to name the task of a conflict), resets and cleans the tree after the replay, records
 * the start, each step and the finish in the ledger, runs the verifications through its sandbox,
 * pushes from the outbox and passes the final gate (no checks here: it waits for the push and
 * records it). That is some 50 short git processes where the shell has 3 git commands and the
 * same 10 bash: within 3x of the shell, following the base stays a small part of any run that
 * does a task, and a replay that grows a process per checkpoint more shows up here. Today 2.7-2.9x
 * on an idle 2-core machine: a thin margin, most of it in the replay's reading of each commit's
 * trailers and HEAD alone (2 git processes per checkpoint) and a second fetch after prepare's.
 */
const TARGET = 3;
const config = parseRepoConfig({ sandbox: 'process', follow_base: 'rebase', verification_baseline: 'off' });
const logger = pino({ level: 'silent' });

/**
 * A goal of 10 checkpoints at rest, then an unrelated commit on main: goal-loop's next run
 * (`follow_base: rebase`: replay, verify each task again, push under a lease, final gate) against
 * the same done by hand in a clone of the same 10 commits, in the same round (`git fetch`,
 * `git rebase origin/main`, the 10 verifications with bash, `git push --force-with-lease`).
 * Each round is a new goal; the median of the rounds.
 */
export async function followBaseBench(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-follow-'));
  const ledger = new SqliteLedger(join(root, 'ledger.db'));
  try {
    const files: Record<string, string> = {};
    for (let i = 0; i < FILES; i++) files[path(i)] = `file ${i}\n${'x'.repeat(200)}\n`;
    const bare = makeBareRepo(root, files);
    const mainClone = join(root, 'main');
    sh(root, 'git', 'clone', '-q', bare, mainClone);
    // One plain clone for the work by hand, on each round's commits in turn.
    const hand = join(root, 'hand');
    sh(root, 'git', 'clone', '-q', bare, hand);
    process.stdout.write(`following the base branch: ${FILES}-file repository, a goal of ${TASKS} checkpoints, an unrelated commit on main, ${ROUNDS} rounds\n`);

    const spent = new TimeSpent();
    const ours: number[] = [];
    const byHand: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const goal = await restingGoal(root, bare, ledger, round);
      // The same 10 commits in the plain clone, on a branch of their own on the same remote.
      sh(hand, 'git', 'fetch', '-q', 'origin');
      sh(hand, 'git', 'checkout', '-q', '-B', 'hand', `origin/${goal.branch}`);
      sh(hand, 'git', 'push', '-q', 'origin', `HEAD:refs/heads/hand/${round}`);
      sh(hand, 'git', 'fetch', '-q', 'origin');
      // main moves: a file no task touches.
      appendFileSync(join(mainClone, path(FILES - 1 - round)), `changed on main in round ${round}\n`);
      sh(mainClone, 'git', '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-am', `main ${round}`);
      sh(mainClone, 'git', 'push', '-q', 'origin', 'HEAD:main');

      // Which goes first alternates: a machine growing busier or quieter weighs on both.
      const measureOurs = async () => ours.push(await followedByGoalLoop(goal, ledger, spent));
      const measureHand = () => byHand.push(followedByHand(hand, goal.spec, `hand/${round}`));
      if (round % 2 === 0) {
        await measureOurs();
        measureHand();
      } else {
        measureHand();
        await measureOurs();
      }
      for (const branch of [goal.branch, `hand/${round}`]) {
        const ahead = execFileSync('git', ['rev-list', '--count', `main..${branch}`], { cwd: bare, encoding: 'utf8' }).trim();
        const behind = execFileSync('git', ['rev-list', '--count', `${branch}..main`], { cwd: bare, encoding: 'utf8' }).trim();
        if (ahead !== String(TASKS) || behind !== '0') throw new Error(`${branch} is not the ${TASKS} commits on main's tip: ${ahead} ahead, ${behind} behind`);
      }
    }

    const oursMedian = median(ours);
    const handMedian = median(byHand);
    const ratio = oursMedian / handMedian;
    process.stdout.write(
      `  by hand: fetch, rebase, ${TASKS} verifications with bash, push --force-with-lease   median ${ms(handMedian)}  (${byHand.map((t) => t.toFixed(0)).join(', ')})\n` +
        `  goal-loop's run with follow_base: rebase                                   median ${ms(oursMedian)}  (${ours.map((t) => t.toFixed(0)).join(', ')})\n` +
        `  ratio                                                                      ${ratio.toFixed(2)}x\n` +
        `  where goal-loop's run goes, per replayed checkpoint (${ROUNDS} runs ÷ ${ROUNDS * TASKS}; a port call's time includes the git commands it ran):\n${spent.report(ROUNDS * TASKS)}\n`,
    );
    return [{ name: 'following the base branch', pass: ratio < TARGET, detail: `${ratio.toFixed(2)}x the same done by hand, ${TASKS} checkpoints (target < ${TARGET}x)` }];
  } finally {
    await ledger.close();
    rmSync(root, { recursive: true, force: true });
  }
}

interface RestingGoal {
  spec: GoalSpec;
  branch: string;
  bare: string;
  dir: string;
}

/** A new goal of TASKS scripted tasks, each changing its own file, run to LOOP_COMPLETE (not timed). */
async function restingGoal(root: string, bare: string, ledger: Ledger, round: number): Promise<RestingGoal> {
  const spec = validateGoalSpec({
    goal_id: `follow-${round}`,
    objective: 'benchmark',
    tasks: Array.from({ length: TASKS }, (_, i) => ({
      id: `t${i}`,
      title: `change ${i}`,
      run: `echo "task ${i} of round ${round}" >> ${path(i)}`,
      verification: `grep -q "task ${i} of round ${round}" ${path(i)}`,
      ...(i > 0 ? { dependencies: [`t${i - 1}`] } : {}),
    })),
  });
  const goal = { spec, branch: `goal/${spec.goal_id}`, bare, dir: join(root, `ws-${round}`) };
  const result = await runConfiguredGoal({ repo: bare, spec, config, ledger, workspace: workspaceOf(goal), sandbox: new ProcessSandbox(), forge: new QuietForge(), logger });
  if (result.status !== 'LOOP_COMPLETE') throw new Error(`bench goal ended ${result.status}: ${result.stop_reason}`);
  return goal;
}

/** The goal's next run, in the clone its first run left, in ms. */
async function followedByGoalLoop(goal: RestingGoal, ledger: Ledger, spent: TimeSpent): Promise<number> {
  const forge = new FollowForge();
  let commands = 0;
  const sandbox: Sandbox = new ProcessSandbox();
  const counted: Sandbox = {
    kind: sandbox.kind,
    run: (req) => {
      commands++;
      return sandbox.run(req);
    },
  };
  spent.timeGit();
  const t0 = performance.now();
  let ended: number;
  try {
    const result = await runConfiguredGoal({
      repo: goal.bare,
      spec: goal.spec,
      config,
      ledger: spent.wrap(ledger, 'ledger'),
      workspace: spent.wrap(workspaceOf(goal), 'workspace'),
      sandbox: spent.wrap(counted, 'sandbox'),
      forge,
      logger,
      followBase: config.follow_base,
    });
    ended = performance.now();
    if (result.status !== 'LOOP_COMPLETE') throw new Error(`bench goal ended ${result.status}: ${result.stop_reason}`);
  } finally {
    spent.stop();
  }
  // Nothing redone: the replay, the verifications again, and nothing else in the sandbox.
  const report = forge.reports[0];
  if (forge.reports.length !== 1 || report?.replayed !== TASKS || report.reverified !== TASKS || report.repairs.length > 0 || commands !== TASKS) {
    throw new Error(`the goal did not just follow its base: ${JSON.stringify(forge.reports)}, ${commands} sandbox commands`);
  }
  return ended - t0;
}

/** What a person types, in ms: the verifications run as the sandbox runs them (`bash -c`). */
function followedByHand(dir: string, spec: GoalSpec, branch: string): number {
  const t0 = performance.now();
  sh(dir, 'git', 'fetch', '-q', 'origin');
  sh(dir, 'git', '-c', 'user.name=b', '-c', 'user.email=b@b', 'rebase', '-q', 'origin/main');
  for (const task of spec.tasks) sh(dir, 'bash', '-c', task.verification);
  sh(dir, 'git', 'push', '-q', '--force-with-lease', 'origin', `HEAD:refs/heads/${branch}`);
  return performance.now() - t0;
}

function workspaceOf(goal: RestingGoal): Workspace {
  return goalWorkspace({ remote: goal.bare, dir: goal.dir, identity: { name: 'goal-loop', email: 'b@b' } }, goal.spec.goal_id, config);
}

function path(i: number): string {
  return `src/d${i % 20}/f${i}.txt`;
}

class FollowForge extends QuietForge {
  readonly reports: BaseFollowedReport[] = [];
  async baseFollowed(_s: unknown, report: BaseFollowedReport): Promise<void> {
    this.reports.push(report);
  }
}
