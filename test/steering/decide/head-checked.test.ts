import { describe, expect, it } from 'vitest';
import { parseRepoConfig } from '../../../src/config/repo-config.js';
import { ciFixTaskId, decideHeadChecked, type HeadCheckedFacts } from '../../../src/steering/decide/head-checked.js';
import type { GoalEvent } from '../../../src/steering/events.js';
import { checksVerdict, type RepoCheck } from '../../../src/steering/repo-checks.js';
import { goal as anyGoal, base, GOAL_BLOCK, github, KEY, ok } from './fixtures.js';

type HeadChecked = Extract<GoalEvent, { type: 'head_checked' }>;
const HEAD = 'a'.repeat(40);
const OLDER = 'b'.repeat(40);
const OWN_APP = 1000;
const CI_APP = 9001;

const check = (name: string, conclusion: string | null, more: Partial<RepoCheck> = {}): RepoCheck => ({
  source: 'check_run',
  name,
  id: 100 + name.length,
  appId: CI_APP,
  appSlug: 'ci-app',
  completed: conclusion !== null,
  conclusion,
  detailsUrl: null,
  output: { title: `${name} ${conclusion}`, summary: 'ran the tests', text: null },
  ...more,
});
const event = (c: RepoCheck, sha = HEAD): HeadChecked => ({ ...base, sender: 'ci-app[bot]', type: 'head_checked', sha, branches: [github.branch], check: c });
const goal: typeof anyGoal = (state = 'LOOP_COMPLETE', meta = {}) => anyGoal(state, { prNumber: 9, ...meta });
const facts = (checks: RepoCheck[], more: Partial<HeadCheckedFacts> = {}): HeadCheckedFacts => ({
  goal: goal(),
  ownAppId: OWN_APP,
  pull: { head: HEAD, draft: true, open: true },
  config: ok,
  required: null,
  checks,
  running: false,
  issueBody: GOAL_BLOCK,
  details: new Map(),
  ...more,
});
const kinds = (f: HeadCheckedFacts, e: HeadChecked) => decideHeadChecked(e, f).actions.map((a) => a.type);

describe('decideHeadChecked: the repository’s CI on a goal PR’s head', () => {
  const test = check('test', 'failure');

  it('a failing check from another app on the head becomes one fix task after the plan, fed with what it said; the goal runs', () => {
    const d = decideHeadChecked(
      event(test),
      facts([test], {
        details: new Map([
          [test.id, { annotations: [{ path: 'src/a.ts', startLine: 3, endLine: 3, level: 'failure', title: null, message: 'expected 2, got 3' }], logTail: 'FAIL src/a.test.ts\n<!-- hidden -->boom' }],
        ]),
      }),
    );
    expect(d.key).toEqual(KEY);
    const meta = d.actions.find((a) => a.type === 'setMeta');
    const tasks = meta && meta.type === 'setMeta' ? meta.patch.extraTasks! : [];
    expect(tasks.map((t) => t.id)).toEqual([ciFixTaskId(HEAD)]);
    const task = tasks[0]!;
    expect(task.title).toBe('Make CI green: test');
    expect(task.dependencies).toEqual(['task-02']);
    expect(task.expect).toBe('green');
    expect(task.description).toContain('> test failure');
    expect(task.description).toContain('> src/a.ts:3 failure: expected 2, got 3');
    expect(task.description).toContain('> FAIL src/a.test.ts');
    // Untrusted text is quoted with what hides words from a reader taken out.
    expect(task.description).not.toContain('<!-- hidden -->');
    expect(d.actions.at(-1)).toEqual({ type: 'schedule', mode: 'run', priority: 'P1' });
    expect(d.actions.some((a) => a.type === 'acceptPlan')).toBe(true);
  });

  it('a second failing check on the same head rewrites the same task with both; a ready PR is made a draft again', () => {
    const lint = check('lint-all', 'failure');
    const first = decideHeadChecked(event(test), facts([test]));
    const earlier = first.actions.find((a) => a.type === 'setMeta')!;
    const extra = earlier.type === 'setMeta' ? earlier.patch.extraTasks! : [];
    const d = decideHeadChecked(event(lint), facts([test, lint], { goal: goal('LOOP_COMPLETE', { extraTasks: extra }), pull: { head: HEAD, draft: false, open: true } }));
    expect(d.actions[0]).toEqual({ type: 'setDraft', prNumber: 9, draft: true });
    const meta = d.actions.find((a) => a.type === 'setMeta')!;
    const tasks = meta.type === 'setMeta' ? meta.patch.extraTasks! : [];
    expect(tasks).toHaveLength(1);
    expect(tasks[0]!.title).toBe('Make CI green: test, lint-all');
  });

  it.each<[string, HeadChecked, HeadCheckedFacts]>([
    ['not a goal branch', event(test), { goal: undefined }],
    ['our own check run', event(check('goal-loop', 'failure', { appId: OWN_APP })), facts([], { ownAppId: OWN_APP })],
    ['a check on an older head', event(test, OLDER), facts([test])],
    ['a closed pull request', event(test), facts([test], { pull: { head: HEAD, draft: true, open: false } })],
    ['a merged goal', event(test), facts([test], { goal: goal('LOOP_COMPLETE', { merged: true }) })],
    ['a goal a human holds (escalated)', event(test), facts([test], { goal: goal('ESCALATED') })],
    ['an invalid config', event(test), facts([test], { config: { ok: false, problems: ['x'] } })],
  ])('starts nothing: %s', (_name, e, f) => {
    expect(decideHeadChecked(e, f).actions).toEqual([]);
  });

  it.each<[string, RepoCheck[], string[] | null]>([
    ['a failed check that was re-run and passes now', [check('test', 'success')], null],
    ['a failing check that is not required when branch protection names others', [test, check('build', 'success')], ['build']],
  ])('no fix task: %s (the draft is made ready: what counts passed)', (_name, checks, required) => {
    expect(kinds(facts(checks, { required }), event(test))).toEqual(['setDraft', 'setMeta', 'log', 'schedule']);
  });

  it('a goal still running starts nothing (its next checkpoint replaces the head; the run’s end looks again); one resting complete whose status turn holds it does', () => {
    expect(decideHeadChecked(event(test), facts([test], { goal: goal('EXECUTING'), running: true })).actions).toEqual([]);
    expect(kinds(facts([test], { running: true }), event(test))).toEqual(['log', 'setMeta', 'setMeta', 'schedule']);
  });

  it('past max_ci_fixes fix tasks the goal escalates, once per head', () => {
    const config = { ok: true as const, config: parseRepoConfig({ max_ci_fixes: 1 }) };
    const earlier = { ...decideHeadChecked(event(test, OLDER), facts([test], { pull: { head: OLDER, draft: true, open: true } })) };
    const meta = earlier.actions.find((a) => a.type === 'setMeta')!;
    const extraTasks = meta.type === 'setMeta' ? meta.patch.extraTasks! : [];
    const d = decideHeadChecked(event(test), facts([test], { config, goal: goal('LOOP_COMPLETE', { extraTasks }) }));
    expect(d.actions.map((a) => a.type)).toEqual(['comment', 'setMeta', 'setState', 'schedule']);
    const comment = d.actions.find((a) => a.type === 'comment')!;
    expect(comment.type === 'comment' && comment.body).toContain("@bob goal-loop needs a human: the repository's checks `test` fail on aaaaaaa after 1 fix task (max_ci_fixes)");
    expect(decideHeadChecked(event(test), facts([test], { config, goal: goal('LOOP_COMPLETE', { extraTasks, ciEscalatedSha: HEAD }) })).actions).toEqual([]);
    // max_ci_fixes: 0 escalates at the first failure.
    const none = { ok: true as const, config: parseRepoConfig({ max_ci_fixes: 0 }) };
    expect(kinds(facts([test], { config: none }), event(test))).toEqual(['comment', 'setMeta', 'setState', 'schedule']);
    // A ready PR is made a draft again.
    expect(kinds(facts([test], { config: none, pull: { head: HEAD, draft: false, open: true } }), event(test))).toEqual(['comment', 'setDraft', 'setMeta', 'setState', 'schedule']);
  });

  it('every counted check passed: a finished goal’s draft is made ready; a check still running, or a goal still running, waits', () => {
    const pass = check('test', 'success');
    expect(decideHeadChecked(event(pass), facts([pass])).actions.slice(0, 2)).toEqual([
      { type: 'setDraft', prNumber: 9, draft: false },
      { type: 'setMeta', patch: { checksAwaited: null } },
    ]);
    expect(decideHeadChecked(event(pass), facts([pass, check('build', null)])).actions).toEqual([]);
    expect(decideHeadChecked(event(pass), facts([pass], { goal: goal('EXECUTING'), running: true })).actions).toEqual([]);
    expect(decideHeadChecked(event(pass), facts([pass], { pull: { head: HEAD, draft: false, open: true } })).actions).toEqual([]);
  });
});

describe('checksVerdict', () => {
  it.each<[string, RepoCheck[], string[] | null, string]>([
    ['nothing yet', [], null, 'none'],
    ['all passed (neutral and skipped pass)', [check('a', 'success'), check('b', 'neutral'), check('c', 'skipped')], null, 'passed'],
    ['one failed', [check('a', 'success'), check('b', 'timed_out')], null, 'failing'],
    ['one still runs', [check('a', 'success'), check('b', null)], null, 'pending'],
    ['a required one has not appeared', [check('a', 'success')], ['a', 'b'], 'pending'],
    ['only required ones count', [check('a', 'success'), check('b', 'failure')], ['a'], 'passed'],
    ['a failing status counts', [check('ci/legacy', 'error', { source: 'status', appId: null })], null, 'failing'],
  ])('%s', (_name, checks, required, verdict) => {
    expect(checksVerdict(checks, required)).toBe(verdict);
  });
});
