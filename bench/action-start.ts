import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readCarriedState } from '../src/action/carried-state.js';
import { createSampleRepo, type SampleRepo } from '../src/demo/sample-repo.js';
import { STATUS_MARKER } from '../src/steering/report/status-comment.js';
import { type FakeGitHub, fakeGitHub } from '../test/helpers/fake-github.js';
import { checkpointCommits, git } from '../test/helpers/git.js';
import { type GitHttpServer, startGitHttpServer } from '../test/helpers/git-http-server.js';
import { type GitHubBridge, githubBridge } from '../test/helpers/github-bridge.js';
import { issuesLabeled, type RepoSpec } from '../test/helpers/webhook-payloads.js';
import { median, printVerdicts, type Verdict } from './stats.js';

/**
 * How long `goal-loop action` takes from its start to its goal's first task, against `goal-loop run`
 * on the same repository: the price of a runner that keeps nothing and rebuilds the goal from GitHub.
 *
 * Each measure spawns the built CLI as a process (as the runner or a person starts it) and ends
 * when the first task's run step writes a timestamp (`date +%s%N`) to a file of this bench; the
 * process is then SIGKILLed with its step (the step's `$$` is its process group). Measured, in
 * the same run and interleaved so drift hits each alike:
 *   - action, new goal: an `issues` labelled event on a fresh issue (nothing to rebuild: the
 *     comments are listed, the permission, the config and the labels read, the status comment
 *     written, then the clone over git's smart HTTP with the token);
 *   - action, continuation: a `workflow_dispatch` of a goal whose status comment carries its record
 *     with 2 of 3 tasks checkpointed (made once, by a run SIGKILLed during its third task; its
 *     comment is put back before each measure), so the measure includes the rebuild: the record
 *     read back, the holder's workflow run asked about, the branch's checkpoints fetched;
 *   - run, local: `goal-loop run --repo <the bare repository>`, as a person runs it on a path;
 *   - run, HTTP (for the record): `goal-loop run` over the same authenticated git server as the
 *     action, which separates the clone's transport from the API's part.
 * The sandbox is `process` in all of them: the jail's start costs the same in both (it is measured
 * by the checkpoint-overhead bench), and this measures what differs. GitHub is the fake of
 * test/helpers in this process, reached by the child through a loopback bridge, so an API call
 * costs a local round trip, not GitHub's ~100-300 ms: the API's share on a real runner is larger.
 * Printed with them, to show what dominates: the floor (Node's start and the CLI's entry,
 * `goal-loop --version`), and Node's start with the import of each command's modules, nothing run.
 *
 * Targets. Here, with the API at loopback prices: the action's first task within 3 s of run's. On
 * github.com its API calls (about ten before the first task, one after the other) add 1-3 s, so
 * that is roughly run + 5 s there: small beside what a hosted job spends before the step starts
 * (the runner, checkout, setup-node: tens of seconds). The API calls before the first task are
 * counted (a count is exact, where the times are noisy on a shared machine): at most 15, each
 * being a round trip a real runner pays.
 */

const RUNS = Number(process.env.BENCH_ACTION_RUNS ?? 5);
const OWNER = 'octo-org';
const REPO = 'widgets';
const TOKEN = 'ghs_bench0123456789abcdefABCDEF012345678';
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const WAIT_MS = 60_000;
/** The continuation's goal: its issue, and its measures' run ids (from CONT_RUN_ID + 1). */
const CONT_ISSUE = 1;
const CONT_RUN_ID = 100;
/** Allowance over `run` for what the action does first, and its API calls before the first task (see above). */
const ALLOWANCE_MS = 3000;
const MAX_API_CALLS = 15;

interface Setup {
  root: string;
  repo: SampleRepo;
  fake: FakeGitHub;
  gitServer: GitHttpServer;
  bridge: GitHubBridge;
  spec: RepoSpec;
}

export async function actionStart(): Promise<Verdict[]> {
  const s = await setUp();
  const close = async () => {
    await s.bridge.close();
    await s.gitServer.close();
    s.fake.stop();
    rmSync(s.root, { recursive: true, force: true });
  };
  try {
    process.stdout.write(`action start to first task: ${RUNS} of each, interleaved; sandbox process; GitHub fake over a loopback bridge, git smart HTTP on loopback\n`);
    const contMarker = join(s.root, 'marks', 'continuation');
    const restore = await carriedGoal(s, contMarker);
    await timeRun(s, 'warm-up', 'local'); // the page cache and the first git spawns, for run as for the action's setup run
    const bare: Measure[] = [];
    const modules = { action: [] as Measure[], run: [] as Measure[] };
    const times = { actionNew: [] as Measure[], actionCont: [] as Measure[], runLocal: [] as Measure[], runHttp: [] as Measure[] };
    for (let i = 0; i < RUNS; i++) {
      times.actionNew.push(await timeActionNew(s, CONT_ISSUE + 1 + i));
      restore();
      times.actionCont.push(await timeActionContinuation(s, CONT_RUN_ID + 1 + i, contMarker));
      times.runLocal.push(await timeRun(s, `local-${i}`, 'local'));
      times.runHttp.push(await timeRun(s, `http-${i}`, 'http'));
      bare.push(await timeVersion());
      modules.action.push(await timeImport('action'));
      modules.run.push(await timeImport('run'));
    }
    if (s.fake.violations.length > 0 || s.fake.unhandled.length > 0) {
      throw new Error(`GitHub API misuse:\n${[...s.fake.violations, ...s.fake.unhandled.map((u) => `unhandled ${u}`)].join('\n')}`);
    }
    const med = (t: Measure[], f: (x: Measure) => number = (x) => x.ms) => median(t.map(f));
    const m = { actionNew: med(times.actionNew), actionCont: med(times.actionCont), runLocal: med(times.runLocal), runHttp: med(times.runHttp) };
    const line = (label: string, t: Measure[]) => {
      const ms = t.map((x) => x.ms);
      const api = t[0]!.apiCalls === undefined ? '' : `; ${med(t, (x) => x.apiCalls!)} API calls, the first at ${sec(med(t, (x) => x.firstApiMs!))}`;
      return `  ${label.padEnd(46)} median ${sec(median(ms))} (min ${sec(Math.min(...ms))}, max ${sec(Math.max(...ms))})${api}\n`;
    };
    // The most of any measure: the count does not depend on the machine's load.
    const calls = Math.max(...[...times.actionNew, ...times.actionCont].map((x) => x.apiCalls!));
    const worst = Math.max(m.actionNew, m.actionCont);
    process.stdout.write(
      line('node + goal-loop --version', bare) +
        line("node + run's modules (import, nothing run)", modules.run) +
        line("node + action's modules (import, nothing run)", modules.action) +
        line('goal-loop run, local path', times.runLocal) +
        line('goal-loop run, git over HTTP', times.runHttp) +
        line('goal-loop action, new goal (issues)', times.actionNew) +
        line('goal-loop action, continuation (dispatch)', times.actionCont) +
        `  action / run (local)                           new goal ${(m.actionNew / m.runLocal).toFixed(2)}x, continuation ${(m.actionCont / m.runLocal).toFixed(2)}x\n` +
        `  action - run (local)                           new goal +${sec(m.actionNew - m.runLocal)}, continuation +${sec(m.actionCont - m.runLocal)}; of it, git over HTTP +${sec(m.runHttp - m.runLocal)}\n` +
        `  on github.com                                  up to ${calls} API round trips this loopback fake does not price: +${sec(calls * 100)} to +${sec(calls * 300)} at 0.1-0.3 s each (an estimate)\n`,
    );
    return [
      {
        name: 'action start to first task',
        pass: worst <= m.runLocal + ALLOWANCE_MS,
        detail: `new goal ${sec(m.actionNew)}, continuation ${sec(m.actionCont)} vs run ${sec(m.runLocal)} (target: at most run + ${sec(ALLOWANCE_MS)})`,
      },
      {
        name: 'action API calls before the first task',
        pass: calls <= MAX_API_CALLS,
        detail: `new goal ${med(times.actionNew, (x) => x.apiCalls!)}, continuation ${med(times.actionCont, (x) => x.apiCalls!)} (medians; at most ${calls} in a run; target: at most ${MAX_API_CALLS})`,
      },
    ];
  } finally {
    await close();
  }
}

async function setUp(): Promise<Setup> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-action-'));
  mkdirSync(join(root, 'marks'));
  const repo = await createSampleRepo(join(root, 'sample'));
  mkdirSync(join(root, 'git', OWNER), { recursive: true });
  symlinkSync(repo.bare, join(root, 'git', OWNER, `${REPO}.git`));
  const gitServer = await startGitHttpServer(join(root, 'git'), 'x-access-token', TOKEN);
  const issues = [
    { number: CONT_ISSUE, title: 'Bench continuation', body: goalBlock(join(root, 'marks', 'continuation'), 3), user: 'alice', labels: ['goal'] },
    ...Array.from({ length: RUNS }, (_, i) => ({
      number: CONT_ISSUE + 1 + i,
      title: `Bench new goal ${i}`,
      body: goalBlock(join(root, 'marks', `new-${i}`), 1),
      user: 'alice',
      labels: ['goal'],
    })),
  ];
  const fake = fakeGitHub({
    owner: OWNER,
    repo: REPO,
    installationId: 1,
    appSlug: 'github-actions',
    appId: 15368,
    workflowToken: TOKEN,
    strictAuth: true,
    collaborators: { alice: 'write' },
    issues,
    resolveSha: (ref) => {
      try {
        return git(repo.bare, 'rev-parse', '--verify', '--quiet', `refs/heads/${ref}`);
      } catch {
        return undefined;
      }
    },
  });
  const bridge = await githubBridge();
  const spec: RepoSpec = { owner: OWNER, repo: REPO, installationId: 1, cloneUrl: `https://github.com/${OWNER}/${REPO}.git`, sender: 'alice' };
  return { root, repo, fake, gitServer, bridge, spec };
}

/**
 * A goal of three tasks; task `stampAt` (1-based) stamps `marker` with the time and its process
 * group, then sleeps until killed; the tasks before it pass at once.
 */
function goalYaml(marker: string, stampAt: number): string {
  const tasks = Array.from({ length: stampAt === 1 ? 1 : 3 }, (_, i) => {
    const run = i + 1 === stampAt ? `echo "$(date +%s%N) $$" >> ${marker}; sleep 30` : `echo ${i + 1} > s${i + 1}`;
    const deps = i > 0 ? `, dependencies: [s${i}]` : '';
    return `  - { id: s${i + 1}, title: Step ${i + 1}, run: '${run}', verification: "true"${deps} }`;
  });
  return `objective: Measure the start\ntasks:\n${tasks.join('\n')}\n`;
}

function goalBlock(marker: string, stampAt: number): string {
  return `Please do this.\n\n\`\`\`goal\n${goalYaml(marker, stampAt)}\`\`\`\n`;
}

/** The runner's environment for one run: a fresh RUNNER_TEMP, the event in GITHUB_EVENT_PATH. */
function runnerEnv(s: Setup, eventName: string, payload: object, runId: number): Record<string, string> {
  const dir = join(s.root, `runner-${runId}`);
  mkdirSync(join(dir, 'temp'), { recursive: true });
  writeFileSync(join(dir, 'event.json'), JSON.stringify(payload));
  return {
    GITHUB_EVENT_NAME: eventName,
    GITHUB_EVENT_PATH: join(dir, 'event.json'),
    GITHUB_REPOSITORY: `${OWNER}/${REPO}`,
    GITHUB_API_URL: `http://${s.bridge.env.GHE_HOST}/api/v3`,
    GITHUB_SERVER_URL: s.gitServer.base,
    GITHUB_WORKSPACE: join(dir, 'workspace'),
    RUNNER_TEMP: join(dir, 'temp'),
    GITHUB_STEP_SUMMARY: join(dir, 'summary.md'),
    GITHUB_OUTPUT: join(dir, 'output'),
    GITHUB_RUN_ID: String(runId),
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_WORKFLOW_REF: `${OWNER}/${REPO}/.github/workflows/goal-loop.yml@refs/heads/main`,
    GITHUB_REF_NAME: 'main',
    INPUT_GITHUB_TOKEN: TOKEN,
    INPUT_TRIGGER_LABEL: 'goal',
    INPUT_CONFIG: '.github/goal-loop.yml',
    INPUT_MAX_RUN_MINUTES: '300',
    INPUT_SANDBOX: 'process',
    GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0',
  };
}

function labeledPayload(s: Setup, issue: number): object {
  const seed = s.fake.issue(issue);
  return issuesLabeled({ ...s.spec, issue: { number: issue, title: seed.title, body: seed.body ?? '', user: 'alice', labels: ['goal'] }, label: 'goal' });
}

function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; exited: Promise<string> } {
  const { DATABASE_URL: _db, ...parent } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...parent, LOG_LEVEL: 'warn', NO_COLOR: '1', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<string>((resolve) => child.on('close', () => resolve(stderr)));
  return { child, exited };
}

interface Measure {
  /** From the spawn to the first task's stamp. */
  ms: number;
  /** The action's: requests GitHub (the fake) received meanwhile, and when the first came (ms from the spawn). */
  apiCalls?: number;
  firstApiMs?: number;
}

/** Spawns the CLI and waits for its first task's stamp (the `nth` line of `marker`), then kills both. */
async function timeToStamp(args: string[], env: Record<string, string>, marker: string, nth = 1): Promise<{ started: number; stamped: number }> {
  const started = Date.now();
  const { child, exited } = startCli(args, env);
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    while (true) {
      const stamp = lines(marker)[nth - 1];
      if (stamp) {
        const [ns = '', pgid = ''] = stamp.split(' ');
        kill(-Number(pgid));
        return { started, stamped: Number(ns) / 1e6 }; // ns since the epoch: a double keeps it to under a microsecond
      }
      if (gone) throw new Error(`goal-loop ${args[0]} ended before its first task:\n${await exited}`);
      if (Date.now() - started > WAIT_MS) throw new Error(`goal-loop ${args[0]}: no first task after ${WAIT_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

async function timeActionNew(s: Setup, issue: number): Promise<Measure> {
  const env = runnerEnv(s, 'issues', labeledPayload(s, issue), 1000 + issue);
  return withCalls(s.fake, await timeToStamp(['action'], env, join(s.root, 'marks', `new-${issue - CONT_ISSUE - 1}`)));
}

/** The measure, with the requests the fake received between the spawn and the stamp. */
function withCalls(fake: FakeGitHub, t: { started: number; stamped: number }): Measure {
  const calls = fake.requests.filter((r) => r.at >= t.started && r.at <= t.stamped);
  return { ms: t.stamped - t.started, apiCalls: calls.length, firstApiMs: (calls[0]?.at ?? Number.NaN) - t.started };
}

async function timeActionContinuation(s: Setup, runId: number, marker: string): Promise<Measure> {
  const labeled = labeledPayload(s, CONT_ISSUE) as { repository: object };
  const dispatch = {
    inputs: { issue: String(CONT_ISSUE) },
    ref: 'refs/heads/main',
    repository: labeled.repository,
    sender: { login: 'alice', type: 'User' },
    workflow: '.github/workflows/goal-loop.yml',
  };
  s.fake.setWorkflowRun({ id: runId, status: 'in_progress', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'workflow_dispatch', head_branch: 'main' });
  const before = lines(marker).length;
  const measure = withCalls(s.fake, await timeToStamp(['action'], runnerEnv(s, 'workflow_dispatch', dispatch, runId), marker, before + 1));
  s.fake.setWorkflowRun({ id: runId, status: 'completed', conclusion: 'cancelled', path: '.github/workflows/goal-loop.yml', event: 'workflow_dispatch', head_branch: 'main' });
  return measure;
}

/**
 * The continuation's goal: a run of its labelled issue, SIGKILLed once s1 and s2 are checkpointed,
 * the status comment carries them and s3 has started. Returns what puts that comment back (each
 * measure's run takes the goal in it, naming itself).
 */
async function carriedGoal(s: Setup, marker: string): Promise<() => void> {
  s.fake.setWorkflowRun({ id: CONT_RUN_ID, status: 'in_progress', conclusion: null, path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'main' });
  const { child, exited } = startCli(['action'], runnerEnv(s, 'issues', labeledPayload(s, CONT_ISSUE), CONT_RUN_ID));
  const status = () => s.fake.commentsOn(CONT_ISSUE).find((c) => c.body.startsWith(STATUS_MARKER));
  const carried = () => {
    const c = status();
    return c ? readCarriedState(c.body).state : undefined;
  };
  const end = Date.now() + WAIT_MS;
  let gone = false;
  void exited.then(() => (gone = true));
  const done = () => {
    const state = carried();
    return checkpointCommits(s.repo.bare, 'goal/1-bench-continuation').length === 2 && state?.tasks.filter((t) => t.status === 'done').length === 2 && lines(marker).length === 1;
  };
  try {
    while (!done()) {
      if (gone) throw new Error(`the continuation's first run ended early:\n${await exited}`);
      if (Date.now() > end) throw new Error("the continuation's first run: s1 and s2 not checkpointed and carried in time");
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
    kill(-Number(lines(marker)[0]?.split(' ')[1]));
  }
  s.fake.setWorkflowRun({ id: CONT_RUN_ID, status: 'completed', conclusion: 'cancelled', path: '.github/workflows/goal-loop.yml', event: 'issues', head_branch: 'main' });
  const comment = status()!;
  const body = comment.body;
  return () => {
    comment.body = body;
  };
}

/** The floor of every measure: Node's start and the CLI's entry, no command's modules loaded. */
async function timeVersion(): Promise<Measure> {
  const started = Date.now();
  const { exited } = startCli(['--version'], {});
  await exited;
  return { ms: Date.now() - started };
}

/** Node's start and the import of a command's modules (dist/src/cli/actions/<command>.js), nothing run. */
async function timeImport(command: 'action' | 'run'): Promise<Measure> {
  const url = new URL(`../src/cli/actions/${command}.js`, import.meta.url).href;
  const started = Date.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(url)})`], { stdio: 'ignore' });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`importing ${url} failed (exit ${code})`);
  return { ms: Date.now() - started };
}

/** `goal-loop run` of the same goal (its own id, ledger and workspaces each time), on the bare repository's path or over HTTP. */
async function timeRun(s: Setup, label: string, via: 'local' | 'http'): Promise<Measure> {
  const dir = join(s.root, `run-${label}`);
  mkdirSync(dir, { recursive: true });
  const marker = join(dir, 'mark');
  writeFileSync(join(dir, 'goal.yml'), `goal_id: bench-${label}\n${goalYaml(marker, 1)}`);
  writeFileSync(join(dir, 'goal-loop.yml'), 'sandbox: process\n');
  const repo = via === 'local' ? s.repo.bare : `${s.gitServer.base.replace('http://', `http://x-access-token:${TOKEN}@`)}/${OWNER}/${REPO}.git`;
  const args = ['run', '--repo', repo, '--goal', join(dir, 'goal.yml'), '--agent', 'scripted', '--config', join(dir, 'goal-loop.yml')];
  const t = await timeToStamp(args, { GOAL_LOOP_DB: join(dir, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(dir, 'workspaces') }, marker);
  return { ms: t.stamped - t.started };
}

function lines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** A step's process group, gone already or not. */
function kill(pgid: number): void {
  if (!Number.isSafeInteger(pgid) || pgid > -2) return; // never 0 or -1: this bench's own group, or everything
  try {
    process.kill(pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

// Run alone: `node dist/bench/action-start.js` after `tsc -p tsconfig.bench.json`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  void actionStart().then((verdicts) => {
    printVerdicts(verdicts);
    process.exitCode = verdicts.every((v) => v.pass) ? 0 : 1;
  });
}
