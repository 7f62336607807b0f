import { parseRepoConfig } from '../../../src/config/repo-config.js';
import type { GoalState } from '../../../src/goal/states.js';
import type { GoalCommand } from '../../../src/steering/commands.js';
import type { Action, ConfigFact, GoalView } from '../../../src/steering/decide/actions.js';
import type { EventBase, GoalEvent, IssueRef } from '../../../src/steering/events.js';
import type { GitHubGoalMeta } from '../../../src/steering/goal-meta.js';
import { githubGoalFrom } from '../../../src/steering/issue-goal.js';

/** Pure builders for decide/ table tests: events as the handlers make them, facts as gather.ts finds them. */

export const KEY = { repo: 'octo-org/widgets', goalId: '7' };

export const base: EventBase = {
  deliveryId: 'd-1',
  installationId: 42,
  owner: 'octo-org',
  repo: 'widgets',
  sender: 'alice',
  repository: { name: 'widgets', owner: { login: 'octo-org' }, clone_url: '/tmp/widgets.git', html_url: 'https://github.com/octo-org/widgets', default_branch: 'main' },
};

export const GOAL_BLOCK = [
  'Please build it.',
  '',
  '```goal',
  'objective: Build the widget',
  'tasks:',
  '  - id: task-01',
  '    title: First',
  '    verification: npm test',
  '  - id: task-02',
  '    title: Second',
  '    dependencies: [task-01]',
  '    verification: npm run lint',
  '```',
].join('\n');

export const INVALID_BLOCK = '```goal\nobjective: x\ntasks: []\n```';

export function issue(body: string | null = GOAL_BLOCK, labels: IssueRef['labels'] = [{ name: 'goal' }]): IssueRef {
  return { number: 7, title: 'Build the widget', body, user: { login: 'alice' }, assignees: [{ login: 'bob' }], labels };
}

export const github = githubGoalFrom(base.repository, issue(), 42);

/** The goal's own pull request #9, as a pull request event names it: its head in this repository. */
export const THIS_REPO = { id: 1296269, fullName: 'octo-org/widgets' };
export const ownPull = { prNumber: 9, headRef: github.branch, headRepo: THIS_REPO, baseRepo: THIS_REPO };
/** A pull request from a fork whose branch is named like the goal's. */
export const forkPull = { ...ownPull, headRepo: { id: 777, fullName: 'mallory/widgets' } };

export const ok: ConfigFact = { ok: true, config: parseRepoConfig(undefined) };
export const okWithGate: ConfigFact = { ok: true, config: parseRepoConfig({ gate: ['npm test', 'npm run lint'] }) };
export const invalid: ConfigFact = { ok: false, problems: ['max_iterations: too big'] };
export const INVALID_CONFIG_BODY = 'goal-loop cannot run: `.github/goal-loop.yml` is invalid.\n\n- max_iterations: too big';
export const REFUSED_BODY = '@alice only people with write access to this repository can start or steer a goal.';

export function goal(state: GoalState = 'EXECUTING', meta: Partial<GitHubGoalMeta> = {}): GoalView {
  return {
    key: KEY,
    state,
    priority: 'P1',
    spec: {
      goal_id: '7',
      objective: 'Build the widget',
      constraints: [],
      acceptance_criteria: [],
      tasks: [
        { id: 'task-01', title: 'First', description: '', dependencies: [], run: [], verification: 'npm test', risk: 'low', requires_approval: false },
        { id: 'task-02', title: 'Second', description: '', dependencies: ['task-01'], run: [], verification: 'npm run lint', risk: 'low', requires_approval: false },
      ],
    } as GoalView['spec'],
    meta: { github, ...meta },
  };
}

export function command(cmd: GoalCommand | { error: string }, opts: { isPullRequest?: boolean; body?: string | null } = {}): Extract<GoalEvent, { type: 'command' }> {
  return {
    ...base,
    type: 'command',
    issue: { ...issue(opts.body === undefined ? GOAL_BLOCK : opts.body), number: opts.isPullRequest ? 9 : 7 },
    isPullRequest: opts.isPullRequest ?? false,
    commentId: 555,
    command: 'error' in cmd ? { ok: false, error: cmd.error } : { ok: true, command: cmd },
  };
}

/** What a human's pause or stop decides for a goal of priority P1 (decide/common.ts pauseOrStop). */
export const controlActions = (request: 'pause' | 'stop', reason: string): Action[] => [
  { type: 'cancel' },
  { type: 'setMeta', patch: { controlReason: reason } },
  { type: 'setControl', control: request },
  { type: 'settleRestingIfIdle' },
  { type: 'schedule', mode: 'status', priority: 'P1' },
];
