import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import type { Store } from '../../src/ledger/open-ledger.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { goalBranch, goalKeyFor } from '../../src/steering/issue-goal.js';
import { labelForState } from '../../src/steering/labels.js';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import type { CliResult } from '../helpers/cli.js';
import { fakeGitHub } from '../helpers/fake-github.js';
import { checkpointCommits } from '../helpers/git.js';
import { goalBlock, INSTALLATION, OWNER, REPO } from '../helpers/github-app-harness.js';
import { githubBridge } from '../helpers/github-bridge.js';
import { freshDatabase } from '../helpers/postgres.js';
import { type ServeProcess, startServeProcess } from '../helpers/serve-process.js';
import { tempDir } from '../helpers/temp.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';
import { startWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/**
 * Scale-out under chaos: a real `goal-loop serve` (webhooks only) and three real `goal-loop worker`
 * processes on one PostgreSQL store. Ten goals are labeled at once; every 2–4 s a random worker is
 * SIGKILLed and a new one started at once (leases are 1 s, so another worker takes its goals over).
 * Afterwards every goal must have converged on GitHub, not only in the ledger: one ready-for-review
 * PR, one status comment, the `goal:review` label alone, a successful check run on the branch head,
 * and one checkpoint commit per task.
 *
 * The kill schedule comes from a seeded PRNG: CHAOS_SEED=<n> replays a schedule (timing still varies).
 */

const SEED = (Number.parseInt(process.env.CHAOS_SEED ?? '', 10) || 20261201) >>> 0;
const GOALS = 10;
const WORKERS = 3;
/** Goals each worker runs at once. */
const CONCURRENCY = 2;
const MAX_KILLS = 6;
const KILL_EVERY_MS: [number, number] = [2000, 4000];
/** After the last kill: how long the goals get to converge (ledger and GitHub). */
const CONVERGE_MS = 90_000;
/** Stops waiting early when every goal is LOOP_COMPLETE and GitHub saw no request for this long. */
const QUIET_MS = 30_000;
const TASKS = ['t1', 't2', 't3'];

/** mulberry32: a tiny seeded PRNG, uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Processes left behind under `root` by a SIGKILLed worker (its git and task commands outlive it):
 * killed by pid, so that the temporary directory can be removed. Only processes whose working
 * directory lies under this test's own temporary directory, which only this test's children use.
 */
async function reapStragglers(root: string): Promise<void> {
  const end = Date.now() + 5000;
  while (true) {
    const pids: number[] = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
      try {
        const cwd = readlinkSync(`/proc/${name}/cwd`);
        if (cwd === root || cwd.startsWith(`${root}/`)) pids.push(Number(name));
      } catch {
        // gone, or not ours to read
      }
    }
    if (pids.length === 0 || Date.now() > end) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await sleep(100);
  }
}

const BODY = goalBlock(`
objective: Three steps under chaos
tasks:
  - { id: t1, title: One, run: "echo 1 > t1", verification: "test -f t1" }
  - { id: t2, title: Two, run: "sleep 1; echo 2 > t2", verification: "test -f t2", dependencies: [t1] }
  - { id: t3, title: Three, run: "echo 3 > t3", verification: "test -f t3", dependencies: [t2] }
`);

const ISSUES = Array.from({ length: GOALS }, (_, i) => ({ number: i + 1, title: `Chaos goal ${i + 1}`, body: BODY, user: 'alice', labels: ['goal'] }));

interface Slot {
  id: number;
  w: WorkerProcess;
  ready: boolean;
  killed: boolean;
  exited: boolean;
  startedAt: number;
}

describe('scale-out chaos: serve + 3 workers on PostgreSQL, workers SIGKILLed at random', () => {
  it(`every goal converges on GitHub (seed ${SEED})`, { timeout: 240_000 }, async () => {
    const t0 = Date.now();
    const at = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
    const events: string[] = [];
    const note = (s: string) => events.push(`${at()} ${s}`);
    const rng = mulberry32(SEED);

    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const tip = (branch: string): string | undefined => {
      try {
        return execFileSync('git', ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: repo.bare, encoding: 'utf8' }).trim() || undefined;
      } catch {
        return undefined;
      }
    };
    const bridge = await githubBridge();
    const fake = fakeGitHub({ owner: OWNER, repo: REPO, installationId: INSTALLATION, collaborators: { alice: 'write' }, issues: ISSUES, strictAuth: true, resolveSha: tip });
    fake.setFile('.github/goal-loop.yml', 'sandbox: process\n');
    let store: Store | undefined;
    let serve: ServeProcess | undefined;
    const slots: Slot[] = [];
    const unexpected: string[] = [];
    let stopping = false;

    // Everything stops at the end of the test body (before temp.ts removes the directories in
    // afterEach), or here when the body never got that far.
    let stopped: Promise<{ ends: CliResult[]; served: CliResult | undefined }> | undefined;
    const shutdown = () =>
      (stopped ??= (async () => {
        stopping = true;
        const ends = await Promise.all(slots.map((s) => s.w.kill()));
        const served = serve ? await serve.kill() : undefined;
        await reapStragglers(root);
        await bridge.close();
        await store?.close();
        fake.stop();
        return { ends, served };
      })());
    onTestFinished(async (ctx) => {
      const { ends, served } = await shutdown();
      if (ctx.task.result?.state === 'fail' || process.env.DEBUG_WORKERS) {
        const problems = (text: string) =>
          text
            .split('\n')
            .filter((l) => /"level":(50|60)/.test(l))
            .slice(-8)
            .map((l) => l.slice(0, 600))
            .join('\n');
        console.error(
          [
            `scale-out chaos FAILED with CHAOS_SEED=${SEED} (replay: CHAOS_SEED=${SEED} npx vitest run test/chaos --project sqlite)`,
            'events:',
            ...events.map((e) => `  ${e}`),
            ...(unexpected.length > 0 ? ['workers that exited on their own:', ...unexpected.map((u) => `  ${u}`)] : []),
            `serve: ${served ? `code ${served.code} signal ${served.signal}\n${problems(served.stderr)}` : 'not started'}`,
            ...ends.map((e, i) => `worker ${slots[i]!.id}: errors\n${problems(e.stderr)}`),
          ].join('\n'),
        );
      }
    });

    try {
      const databaseUrl = await freshDatabase();
      const storeEnv = { DATABASE_URL: databaseUrl };
      const workspaces = (id: number) => join(root, `worker-${id}`); // one "machine" each
      let nextId = 1;
      function startWorker(): Slot {
        const id = nextId++;
        const w = startWorkerProcess({ bridge, store: storeEnv, workspaces: workspaces(id), env: { GOAL_LOOP_CONCURRENCY: String(CONCURRENCY), LOG_LEVEL: 'info' } });
        const slot: Slot = { id, w, ready: false, killed: false, exited: false, startedAt: Date.now() };
        let seen = '';
        w.child.stderr!.on('data', (c: Buffer) => {
          if (slot.ready) return;
          seen += c.toString();
          if (seen.includes('goal-loop worker is running')) {
            slot.ready = true;
            seen = '';
          }
        });
        void w.done.then((r) => {
          slot.exited = true;
          if (slot.killed || stopping) return;
          if (unexpected.length >= 20) return; // a worker that cannot start at all: the wait below fails
          // A worker that died on its own (e.g. at startup): recorded, and replaced like a killed one.
          const tail = r.stderr
            .split('\n')
            .filter((l) => /"level":(50|60)|Error/.test(l))
            .slice(-3)
            .join(' | ')
            .slice(0, 800);
          unexpected.push(`${at()} worker ${id} exited (code ${r.code}, signal ${r.signal}, ${slot.ready ? 'after' : 'before'} it was ready): ${tail}`);
          note(`worker ${id} exited on its own; starting a replacement`);
          slots.push(startWorker());
        });
        note(`worker ${id} started`);
        return slot;
      }
      const live = () => slots.filter((s) => !s.exited && !s.killed);

      serve = await startServeProcess({ bridge, store: storeEnv, workspaces: join(root, 'serve') });
      for (let i = 0; i < WORKERS; i++) slots.push(startWorker());
      await serve.ready(60_000);
      note('serve ready');
      const allReady = Date.now() + 60_000;
      while (live().filter((s) => s.ready).length < WORKERS) {
        if (Date.now() > allReady) throw new Error(`seed ${SEED}: the workers were not ready within 60 s`);
        await sleep(50);
      }
      note('workers ready');
      store = await openPostgresStore(databaseUrl);
      const ledger = store.ledger;
      const serveAlive = () => {
        if (!serve!.alive()) throw new Error(`seed ${SEED}: the serve process exited (the harness never kills it): see the log below`);
      };

      const repoSpec = { owner: OWNER, repo: REPO, installationId: INSTALLATION, cloneUrl: repo.bare, sender: 'alice' };
      for (const issue of ISSUES) {
        const res = await serve.deliver('issues', issuesLabeled({ ...repoSpec, issue, label: 'goal' }));
        expect(res.status, `seed ${SEED}: delivery of issues.labeled #${issue.number}`).toBe(200);
      }
      note(`labeled ${GOALS} issues`);

      const states = async () => Promise.all(ISSUES.map(async (i) => (await ledger.getGoal(goalKeyFor(OWNER, REPO, i.number)))?.state ?? 'absent'));
      const allComplete = async () => (await states()).every((s) => s === 'LOOP_COMPLETE');

      // ---------- chaos ----------
      let kills = 0;
      while (kills < MAX_KILLS) {
        await sleep(KILL_EVERY_MS[0] + rng() * (KILL_EVERY_MS[1] - KILL_EVERY_MS[0]));
        serveAlive();
        if (await allComplete()) {
          note('all goals LOOP_COMPLETE in the ledger: no more kills');
          break;
        }
        const pick = rng();
        const ready = live().filter((s) => s.ready);
        const candidates = ready.length > 0 ? ready : live();
        const victim = candidates[Math.floor(pick * candidates.length)];
        if (!victim) continue;
        victim.killed = true;
        const r = await victim.w.kill('SIGKILL');
        kills++;
        note(`SIGKILL worker ${victim.id} (${r.signal ?? `exit ${r.code}`}; ledger: ${(await states()).join(',')})`);
        slots.push(startWorker());
      }
      note(`chaos over after ${kills} kills`);

      // ---------- convergence ----------
      const branches = ISSUES.map((i) => goalBranch(i.number, i.title));
      async function whatIsWrong(): Promise<string[]> {
        const st = await states();
        const out: string[] = [];
        ISSUES.forEach((issue, idx) => {
          const n = issue.number;
          const branch = branches[idx]!;
          const wrong: string[] = [];
          if (st[idx] !== 'LOOP_COMPLETE') wrong.push(`ledger state ${st[idx]}`);
          const prs = fake.pulls.filter((p) => p.head === branch);
          if (prs.length !== 1) wrong.push(`${prs.length} PRs on ${branch}`);
          for (const p of prs) {
            if (p.draft) wrong.push(`PR #${p.number} is still a draft`);
            if (p.state !== 'open') wrong.push(`PR #${p.number} is ${p.state}`);
          }
          const statuses = fake.commentsOn(n).filter((c) => c.body.includes(STATUS_MARKER));
          if (statuses.length !== 1) wrong.push(`${statuses.length} status comments`);
          const goalLabels = fake.labels(n).filter((l) => l.startsWith('goal:'));
          if (goalLabels.length !== 1 || goalLabels[0] !== labelForState('LOOP_COMPLETE')) wrong.push(`goal labels [${goalLabels.join(', ')}]`);
          const head = tip(branch);
          const checks = fake.checkRuns.filter((c) => c.name === 'goal-loop' && head !== undefined && c.headSha === head);
          if (checks.length === 0) wrong.push(`no goal-loop check run on the branch head ${head?.slice(0, 8) ?? '(no branch)'}`);
          for (const c of checks) if (c.status !== 'completed' || c.conclusion !== 'success') wrong.push(`check run ${c.id} ${c.status}/${c.conclusion ?? '-'}`);
          const tasks = checkpointCommits(repo.bare, branch).map((c) => c.task);
          if (tasks.join(',') !== TASKS.join(',')) wrong.push(`checkpoints [${tasks.join(', ')}]`);
          if (wrong.length > 0) out.push(`#${n}: ${wrong.join('; ')}`);
        });
        return out;
      }

      // Bounded by CONVERGE_MS; also over once nothing moves any more: every goal LOOP_COMPLETE in the
      // ledger and no request reached GitHub for QUIET_MS (no worker has anything left to do).
      const end = Date.now() + CONVERGE_MS;
      let requests = fake.requests.length;
      let quietSince = Date.now();
      let wrong = await whatIsWrong();
      let quiet = false;
      while (wrong.length > 0 && Date.now() < end) {
        serveAlive();
        await sleep(250);
        wrong = await whatIsWrong();
        if (fake.requests.length !== requests) {
          requests = fake.requests.length;
          quietSince = Date.now();
        } else if (Date.now() - quietSince > QUIET_MS && (await allComplete())) {
          quiet = true;
          break;
        }
      }
      note(wrong.length > 0 ? (quiet ? `not converged, and no request to GitHub for ${QUIET_MS / 1000} s` : `not converged after ${CONVERGE_MS / 1000} s`) : 'converged');
      const summary = `seed ${SEED}, ${kills} kills, ${unexpected.length} workers exited on their own`;
      expect(wrong, `${summary}: goals not converged on GitHub after the last kill (${quiet ? `quiet for ${QUIET_MS / 1000} s` : `${CONVERGE_MS / 1000} s`}):\n${wrong.join('\n')}`).toEqual([]);
      expect(fake.violations, `${summary}: violations`).toEqual([]);
      expect(fake.unhandled, `${summary}: unhandled requests`).toEqual([]);
      console.log(`scale-out chaos: ${summary}, converged in ${at()}`);
    } finally {
      await shutdown();
    }
  });
});
