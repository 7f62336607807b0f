import { describe, expect, it } from 'vitest';
import { GOAL_COMMAND_TABLE } from '../../../src/steering/commands.js';
import type { Action } from '../../../src/steering/decide/actions.js';
import { type CommandFacts, decideCommand } from '../../../src/steering/decide/command.js';
import { command, controlActions, GOAL_BLOCK, github, goal, INVALID_BLOCK, INVALID_CONFIG_BODY, invalid, KEY, ok, REFUSED_BODY } from './fixtures.js';

const eyes: Action = { type: 'react', content: 'eyes' };
const plus: Action = { type: 'react', content: '+1' };
const confused: Action = { type: 'react', content: 'confused' };
const reply = (body: string, issueNumber = 7): Action => ({ type: 'comment', issueNumber, body });
const refused = (body: string, issueNumber = 7): Action[] => [eyes, reply(body, issueNumber), confused];
const run: Action = { type: 'schedule', mode: 'run', priority: 'P1' };
const status: Action = { type: 'schedule', mode: 'status', priority: 'P1' };
const accepted: Action[] = [{ type: 'acceptPlan', branch: github.branch, spec: expect.objectContaining({ goal_id: '7' }), issuePlan: { kind: 'spec' } }];
const control = controlActions;
const NO_GOAL = 'There is no goal here yet. Add the `goal` label or comment `/goal start` on the issue.';
const NO_TASK = (id: string) => `There is no task \`${id}\` in this goal.`;
const DONE = 'This goal is done: pull request #9 was merged. Open a new issue for more work.';
const steering = (g = goal(), more: Partial<CommandFacts> = {}): CommandFacts => ({ maySteer: true, goal: g, issueBody: GOAL_BLOCK, ...more });
const merged = goal('LOOP_COMPLETE', { merged: true, prNumber: 9 });

describe('decideCommand: (event, facts) -> actions', () => {
  it.each<[string, ReturnType<typeof command>, CommandFacts, Action[]]>([
    [
      'sender without write access: refused, no reaction',
      command({ name: 'pause' }),
      { maySteer: false },
      [reply(REFUSED_BODY), { type: 'log', msg: 'refused: no write access', data: { sender: 'alice', type: 'command' } }],
    ],
    ['unparsable command: the error and the help', command({ error: 'unknown command `/goal deploy`' }), { maySteer: true }, refused(`unknown command \`/goal deploy\`.\n\n${GOAL_COMMAND_TABLE}`)],
    ['help', command({ name: 'help' }), { maySteer: true }, [eyes, reply(GOAL_COMMAND_TABLE), plus]],
    [
      'start on a pull request: refused',
      command({ name: 'start' }, { isPullRequest: true }),
      { maySteer: true },
      refused('`/goal start` works on issues; on a goal pull request use `/goal resume`.', 9),
    ],
    ['start with an invalid config: reported', command({ name: 'start' }), { maySteer: true, config: invalid }, [eyes, reply(INVALID_CONFIG_BODY), confused]],
    [
      'start: started, spec at acceptance',
      command({ name: 'start' }),
      { maySteer: true, config: ok, goal: undefined, running: false },
      [
        eyes,
        expect.objectContaining({ type: 'upsertGoal', priority: 'P2' }),
        { type: 'setMeta', patch: { github, issuePlan: { kind: 'spec' } } },
        { type: 'setControl', control: null },
        { type: 'setState', state: 'INITIALIZING', event: 'start', detail: 'started by @alice', stopReason: null },
        { type: 'schedule', mode: 'run', priority: 'P2' },
        plus,
      ],
    ],
    ['start on a merged goal: refused', command({ name: 'start' }), { maySteer: true, config: ok, goal: merged, running: false }, refused(DONE)],
    ['no goal here', command({ name: 'resume' }), { maySteer: true, goal: undefined }, refused(NO_GOAL)],
    ['a record without its GitHub home is no goal here', command({ name: 'resume' }), { maySteer: true, goal: { ...goal(), meta: {} } }, refused(NO_GOAL)],
    ['merged goal: commands refused', command({ name: 'resume' }), steering(merged), refused(DONE)],
    ['merged goal: status still answered', command({ name: 'status' }), steering(merged), [eyes, status, plus]],
    [
      'plan: rebuilt and shown',
      command({ name: 'plan' }),
      steering(),
      [eyes, ...accepted, { type: 'setMeta', patch: { planApproved: false } }, { type: 'schedule', mode: 'plan', priority: 'P1' }, plus],
    ],
    [
      'approve: the plan, and a go-ahead newer than any pause',
      command({ name: 'approve' }),
      steering(goal('AWAITING_APPROVAL')),
      [eyes, { type: 'setMeta', patch: { planApproved: true } }, ...accepted, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'approve a task',
      command({ name: 'approve', taskId: 'task-02' }),
      steering(goal('AWAITING_APPROVAL')),
      [eyes, { type: 'updateTask', taskId: 'task-02', patch: { approved: true } }, ...accepted, { type: 'setControl', control: null }, run, plus],
    ],
    ['approve an unknown task: refused', command({ name: 'approve', taskId: 'nope' }), steering(), refused(NO_TASK('nope'))],
    ['pause', command({ name: 'pause' }), steering(), [eyes, ...control('pause', 'paused by a human'), plus]],
    ['stop', command({ name: 'stop' }), steering(), [eyes, ...control('stop', 'stopped by a human'), plus]],
    ['resume', command({ name: 'resume' }), steering(goal('PAUSED')), [eyes, ...accepted, { type: 'setControl', control: null }, run, plus]],
    ['retry a task', command({ name: 'retry', taskId: 'task-01' }), steering(goal('ESCALATED')), [eyes, ...accepted, { type: 'setControl', control: null }, run, plus]],
    ['retry an unknown task: refused', command({ name: 'retry', taskId: 'nope' }), steering(), refused(NO_TASK('nope'))],
    [
      'resume with an issue without a block: plan none, the spec kept',
      command({ name: 'resume' }, { body: 'words' }),
      steering(goal('PAUSED'), { issueBody: 'words' }),
      [eyes, { type: 'acceptPlan', branch: github.branch, issuePlan: { kind: 'none' } }, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'resume with an invalid block: plan invalid, the spec kept',
      command({ name: 'resume' }),
      steering(goal('PAUSED'), { issueBody: INVALID_BLOCK }),
      [eyes, { type: 'acceptPlan', branch: github.branch, issuePlan: { kind: 'invalid', errors: [expect.any(String)] } }, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'resume on a pull request whose issue could not be read: the worker reads the plan',
      command({ name: 'resume' }, { isPullRequest: true }),
      steering(goal('PAUSED'), { issueBody: undefined }),
      [eyes, { type: 'setMeta', patch: { issuePlan: null } }, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'resume while a loop runs the goal: the plan is left to the next turn',
      command({ name: 'resume' }),
      steering(goal('EXECUTING'), { issueBody: 'edited', running: true }),
      [eyes, { type: 'setMeta', patch: { issuePlan: null } }, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'skip on a resting goal: it goes on',
      command({ name: 'skip', taskId: 'task-01' }),
      steering(goal('ESCALATED')),
      [eyes, { type: 'updateTask', taskId: 'task-01', patch: { status: 'skipped' } }, { type: 'setControl', control: null }, run, plus],
    ],
    [
      'skip on a running goal: the loop picks it up',
      command({ name: 'skip', taskId: 'task-01' }),
      steering(goal('EXECUTING')),
      [eyes, { type: 'updateTask', taskId: 'task-01', patch: { status: 'skipped' } }, plus],
    ],
    ['skip an unknown task: refused', command({ name: 'skip', taskId: 'nope' }), steering(), refused(NO_TASK('nope'))],
    ['status', command({ name: 'status' }), steering(), [eyes, status, plus]],
    ['budget', command({ name: 'budget', usd: 12.5 }), steering(), [eyes, { type: 'setMeta', patch: { budgetUsd: 12.5 } }, status, plus]],
  ])('%s', (_name, event, facts, actions) => {
    expect(decideCommand(event, facts).actions).toEqual(actions);
  });

  it('names the goal the command is about', () => {
    expect(decideCommand(command({ name: 'status' }, { isPullRequest: true }), steering()).key).toEqual(KEY);
    expect(decideCommand(command({ name: 'help' }), { maySteer: true }).key).toBeUndefined();
  });

  it("carries the reviews' tasks into the accepted spec", () => {
    const extra = { id: 'review-1', title: 'Address review 1', description: '', dependencies: ['task-02'], run: [], verification: 'true', risk: 'low' as const, requires_approval: false };
    const d = decideCommand(command({ name: 'resume' }), steering(goal('PAUSED', { extraTasks: [extra] })));
    const accept = d.actions.find((a) => a.type === 'acceptPlan');
    expect(accept && accept.type === 'acceptPlan' && accept.spec?.tasks.map((t) => t.id)).toEqual(['task-01', 'task-02', 'review-1']);
  });
});
