import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { openSqliteStore } from '../../src/ledger/open-ledger.js';
import { openPostgresStore } from '../../src/ledger/postgres/open-postgres.js';
import { drainEffects, MAX_EFFECT_TRIES } from '../../src/loop/outbox.js';
import { goalLeaseName } from '../../src/worker/lease.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/postgres.js';
import { rawSpec, rawTask, SEED_GOAL_FILE } from '../helpers/spec-builders.js';
import { tempDir } from '../helpers/temp.js';

const DEMO_GOAL = fileURLToPath(new URL('../../examples/demo-goal.yml', import.meta.url));

describe('goal-loop plan', () => {
  it('prints the ordered checklist and a mermaid graph of the DAG', async () => {
    const root = await tempDir();
    const r = await runCli(['plan', '--repo', root, '--goal', DEMO_GOAL]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('goal: demo-slugify');
    const checklist = r.stdout.split('tasks, in order:')[1]!;
    expect(checklist.indexOf('1. slug-core')).toBeLessThan(checklist.indexOf('2. slug-tests'));
    expect(checklist).toContain('4. slug-cli  Add a slug command-line entry point  (after slug-core, slug-tests)');
    expect(r.stdout).toMatch(/```mermaid\ngraph TD\n/);
    expect(r.stdout).toContain('t0 --> t1');
    expect(r.stdout).toContain('t1 --> t3');
  });

  it('plans from the ```goal block of an issue body in markdown', async () => {
    const root = await tempDir();
    const issue = join(root, 'issue.md');
    await writeFile(issue, 'Please do this.\n\n```goal\nobjective: from an issue\ntasks:\n  - {id: only, title: The only task, verification: "true"}\n```\n\nThanks!\n');
    const r = await runCli(['plan', '--repo', root, '--issue', issue]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('goal: issue');
    expect(r.stdout).toContain('1. only  The only task');
    // `true` cannot fail: a warning after validation, not a failure.
    expect(r.stderr).toBe('goal-loop: warning: tasks[0].verification: cannot fail ("true" alone): a verification must fail before the task and pass after it (task "only")\n');
  });

  it('warns about each verification that cannot fail, also with --json, and still exits 0', async () => {
    const root = await tempDir();
    const goal = join(root, 'goal.yml');
    const tasks = [rawTask('a', [], { verification: 'npm test || true' }), rawTask('b', ['a'], { verification: 'test "$MODE" = true' }), rawTask('c', ['b'], { verification: 'npm test; exit 0' })];
    await writeFile(goal, JSON.stringify(rawSpec(tasks)));
    for (const json of [[], ['--json']]) {
      const r = await runCli(['plan', '--repo', root, '--goal', goal, ...json]);
      expect(r.code).toBe(0);
      expect(r.stderr.trimEnd().split('\n')).toEqual([
        'goal-loop: warning: tasks[0].verification: cannot fail ("|| true" at the end): a verification must fail before the task and pass after it (task "a")',
        'goal-loop: warning: tasks[2].verification: cannot fail ("; exit 0" at the end): a verification must fail before the task and pass after it (task "c")',
      ]);
    }
    expect(JSON.parse((await runCli(['plan', '--repo', root, '--goal', goal, '--json'])).stdout).tasks).toHaveLength(3);
    const clean = await runCli(['plan', '--repo', root, '--goal', DEMO_GOAL]);
    expect(clean.stderr).toBe('');
  });

  it("accepts the seed document's example spec unchanged", async () => {
    const root = await tempDir();
    const r = await runCli(['plan', '--repo', root, '--goal', SEED_GOAL_FILE, '--json']);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.stdout);
    expect(parsed.goal_id).toBe('goal-auth-migration-8841');
    expect(parsed.tasks.map((t: { id: string }) => t.id)).toEqual(['task-01', 'task-02', 'task-03', 'task-04', 'task-05']);
  });

  it('refuses an issue without a goal block, and a plan without a source, with exit 1', async () => {
    const root = await tempDir();
    const issue = join(root, 'issue.md');
    await writeFile(issue, 'Just prose, no goal block.\n');
    const r = await runCli(['plan', '--repo', root, '--issue', issue], { ANTHROPIC_API_KEY: '' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no ```goal block/);
    expect((await runCli(['plan', '--repo', root])).code).toBe(1);
  });
});

describe('goal-loop status', () => {
  it("lists the ledger's goals with state, progress and budget", async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'ws') };
    expect((await runCli(['status'], env)).stdout).toMatch(/no goals/);
    const run = await runCli(['run', '--repo', repo.bare, '--goal', DEMO_GOAL, '--agent', 'scripted'], env);
    expect(run.code).toBe(0);
    const r = await runCli(['status', '--json'], env);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ goal_id: 'demo-slugify', repo: repo.bare, state: 'LOOP_COMPLETE', tasks_completed: 4, tasks_total: 4, iterations: 5 })]);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(/demo-slugify {2}LOOP_COMPLETE {2}4\/4 tasks {2}5 iterations/);
    expect(text.stdout).toMatch(/idle/);
    expect(text.stdout.trimEnd().split('\n').at(-1)).toBe('what each attempt did: goal-loop logs <goal-id> [--follow]');
  });

  it('reads the PostgreSQL ledger and queue when DATABASE_URL is set', async () => {
    const url = await freshDatabase();
    const store = await openPostgresStore(url);
    await store.ledger.upsertGoal({ repo: 'o/r', goalId: 'shared' }, { spec: validateGoalSpec(rawSpec([rawTask('a')], { goal_id: 'shared' })), branch: 'goal/shared' });
    await store.queue.enqueue({ key: { repo: 'o/r', goalId: 'shared' }, mode: 'run', priority: 'P0' });
    await store.close();
    const r = await runCli(['status', '--json'], { DATABASE_URL: url, GOAL_LOOP_DB: '/nonexistent/never.db' });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ goal_id: 'shared', queued: expect.objectContaining({ mode: 'run' }), leased: null })]);
  });

  it('shows which goals are queued and which are leased, by which worker and how fresh its heartbeat is', async () => {
    const root = await tempDir();
    const path = join(root, 'ledger.db');
    const store = openSqliteStore(path);
    const spec = (id: string) => validateGoalSpec(rawSpec([rawTask('a')], { goal_id: id, limits: { cost_cap_usd: 4 } }));
    await store.ledger.upsertGoal({ repo: 'o/r', goalId: 'waiting' }, { spec: spec('waiting'), branch: 'goal/waiting', priority: 'P1' });
    await store.ledger.upsertGoal({ repo: 'o/r', goalId: 'working' }, { spec: spec('working'), branch: 'goal/working' });
    await store.queue.enqueue({ key: { repo: 'o/r', goalId: 'waiting' }, mode: 'run', priority: 'P1' });
    await store.ledger.acquireLease(goalLeaseName({ repo: 'o/r', goalId: 'working' }), 'host-a:123:abc', 60_000);
    await store.close();
    const r = await runCli(['status', '--json'], { GOAL_LOOP_DB: path });
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    const byId = new Map(rows.map((x) => [x.goal_id, x]));
    expect(byId.get('waiting')).toMatchObject({ queued: { mode: 'run' }, leased: null, cost_cap_usd: 4 });
    expect(byId.get('working')).toMatchObject({ queued: null, leased: { worker: 'host-a:123:abc' } });
    expect((byId.get('working')!.leased as { heartbeat_age_s: number }).heartbeat_age_s).toBeLessThan(30);
    const text = await runCli(['status'], { GOAL_LOOP_DB: path });
    expect(text.stdout).toMatch(/working .*\n.*leased by host-a:123:abc \(heartbeat \d+(\.\d)?s ago\)/);
    expect(text.stdout).toMatch(/waiting .*\$0\.00 of \$4\.00.*\n.*queued \(run\) since/);
  });

  it('shows the effects still pending on GitHub per goal, how old the oldest is, and the last error', async () => {
    const root = await tempDir();
    const path = join(root, 'ledger.db');
    const store = openSqliteStore(path);
    const spec = (id: string) => validateGoalSpec(rawSpec([rawTask('a')], { goal_id: id }));
    const stuck = { repo: 'o/r', goalId: 'stuck' };
    await store.ledger.upsertGoal(stuck, { spec: spec('stuck'), branch: 'goal/stuck' });
    await store.ledger.upsertGoal({ repo: 'o/r', goalId: 'clean' }, { spec: spec('clean'), branch: 'goal/clean' });
    await store.ledger.recordChange(stuck, {
      transitions: [{ to: 'LOOP_COMPLETE', event: 'gate_done', stopReason: 'done' }],
      effects: [
        { kind: 'finished', payload: {} },
        { kind: 'sync', payload: {} },
      ],
    });
    const [first] = await store.ledger.pendingEffects();
    expect(await store.ledger.claimEffect(first!.id, 'w', 60_000)).toBe(1);
    await store.ledger.failEffect(first!.id, 'w', 'HttpError: Bad gateway - https://api.github.com/graphql', 60_000);
    await store.close();

    const r = await runCli(['status', '--json'], { GOAL_LOOP_DB: path });
    const byId = new Map((JSON.parse(r.stdout) as Record<string, unknown>[]).map((x) => [x.goal_id, x]));
    expect(byId.get('stuck')).toMatchObject({ on_github: false, pending_effects: { count: 2, kinds: ['finished', 'sync'], tries: 1, last_error: expect.stringMatching(/Bad gateway/) } });
    expect((byId.get('stuck')!.pending_effects as { oldest_age_s: number }).oldest_age_s).toBeLessThan(60);
    expect(byId.get('clean')!.pending_effects).toBeNull();
    const text = await runCli(['status'], { GOAL_LOOP_DB: path });
    expect(text.stdout).toMatch(/^2 effects pending, the oldest \d+s old/);
    // A local goal's report is made by its next run (a GitHub goal's by a worker: "pending on GitHub").
    expect(text.stdout).toMatch(
      /stuck .*\n.*\n.*done\n {2}pending report: finished, sync \(2, oldest \d+s, tried 1 time\); last error: HttpError: Bad gateway.*; the next `goal-loop run` of this goal makes it/,
    );
  });

  it('shows an effect given up after its last try, per goal, with why', async () => {
    const root = await tempDir();
    const path = join(root, 'ledger.db');
    const store = openSqliteStore(path);
    const key = { repo: 'o/r', goalId: 'unheard' };
    await store.ledger.upsertGoal(key, { spec: validateGoalSpec(rawSpec([rawTask('a')], { goal_id: 'unheard' })), branch: 'goal/unheard' });
    await store.ledger.recordChange(key, { transitions: [{ to: 'ESCALATED', event: 'escalate', stopReason: 'a escalated' }], effects: [{ kind: 'escalate', payload: {} }] });
    const [effect] = await store.ledger.pendingEffects({ key });
    // Every try but the last already made (each claim counts one); the last fails too.
    while ((await store.ledger.claimEffect(effect!.id, 'w', 0)) < MAX_EFFECT_TRIES - 1);
    const perform = async () => {
      throw new Error('HttpError: Server Error');
    };
    expect(await drainEffects({ outbox: store.ledger, key, holder: 'w', claimMs: 1000, perform, logger: pino({ level: 'silent' }) })).toBe(0);
    expect(await store.ledger.pendingEffects({ key })).toEqual([]);
    expect(await store.ledger.prune({ expiredLeasesMs: 0, handledDeliveriesMs: -60_000 })).toMatchObject({ effects: 0 }); // kept
    await store.close();

    const r = await runCli(['status', '--json'], { GOAL_LOOP_DB: path });
    const row = (JSON.parse(r.stdout) as Record<string, unknown>[])[0]!;
    expect(row.pending_effects).toBeNull();
    expect(row.given_up_effects).toEqual([
      { kind: 'escalate', tries: MAX_EFFECT_TRIES, given_up_at: expect.any(String), error: expect.stringMatching(/^given up after 20 tries: HttpError: Server Error/) },
    ]);
    const text = await runCli(['status'], { GOAL_LOOP_DB: path });
    expect(text.stdout).toMatch(/^1 effect given up after 20 tries \(see each goal\)/);
    expect(text.stdout).toMatch(/unheard .*\n.*\n.*a escalated\n {2}given up: escalate at \S+; given up after 20 tries: HttpError: Server Error/);
  });

  it('status from any folder reads the one ledger of the user, and looking creates nothing', async () => {
    const root = await tempDir();
    const env = { XDG_STATE_HOME: join(root, 'state'), GOAL_LOOP_DB: '' };
    const empty = await runCli(['status'], env, root);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toMatch(/^no goals in the ledger yet \(.*state\/goal-loop\/ledger\.db does not exist/);
    expect(existsSync(join(root, '.goal-loop'))).toBe(false);
    expect(existsSync(join(root, 'state'))).toBe(false);
    expect((await runCli(['status', '--json'], env, root)).stdout).toBe('[]\n');

    const store = openSqliteStore(join(root, 'state', 'goal-loop', 'ledger.db'));
    await store.ledger.upsertGoal({ repo: 'o/r', goalId: 'mine' }, { spec: validateGoalSpec(rawSpec([rawTask('a')], { goal_id: 'mine' })), branch: 'goal/mine' });
    await store.close();
    for (const cwd of [root, join(root, 'state')]) expect((await runCli(['status'], env, cwd)).stdout).toMatch(/^mine {2}INITIALIZING/);
  });
});
