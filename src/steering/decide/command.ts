import { GOAL_COMMAND_TABLE, type GoalCommand } from '../commands.js';
import type { EventOf } from '../events.js';
import type { Action, ConfigFact, EventDecision, GoalView } from './actions.js';
import { acceptSpec, doneRefusal, invalidConfigComment, isMerged, isResting, noTaskRefusal, pauseOrStop, refuseSender } from './common.js';
import { decideStart } from './start.js';

/** Commands whose acceptance (re)reads the issue's plan: the spec at acceptance. */
export const ACCEPTING_COMMANDS: ReadonlySet<GoalCommand['name']> = new Set(['start', 'plan', 'approve', 'resume', 'retry']);

export interface CommandFacts {
  maySteer: boolean;
  /**
   * The goal the command is about (for `start`, the issue's goal, if it has one already): looked
   * up by issue number, or on a pull request by meta.prNumber. Absent for an unparsable command or help.
   */
  goal?: GoalView | undefined;
  /** A worker holds the goal's lease. */
  running?: boolean;
  /** `.github/goal-loop.yml`; loaded for `/goal start` on an issue only. */
  config?: ConfigFact;
  /**
   * The goal's issue body, for an accepting command: the event's own for a comment on the issue,
   * fetched for one on the pull request; undefined when it could not be read.
   */
  issueBody?: string | undefined;
}

const NO_GOAL = 'There is no goal here yet. Add the `goal` label or comment `/goal start` on the issue.';

/** A `/goal …` comment: authorize, acknowledge (eyes), act, and answer with +1 or confused (and a reply). */
export function decideCommand(e: EventOf<'command'>, facts: CommandFacts): EventDecision {
  if (!facts.maySteer) return { actions: refuseSender(e.sender, e.type, e.issue.number) };
  const reply = (body: string): Action => ({ type: 'comment', issueNumber: e.issue.number, body });
  const refuse = (body: string): EventDecision => ({ actions: [{ type: 'react', content: 'eyes' }, reply(body), { type: 'react', content: 'confused' }] });
  const done = (d: EventDecision): EventDecision => ({ ...d, actions: [{ type: 'react', content: 'eyes' }, ...d.actions, { type: 'react', content: '+1' }] });
  if (!e.command.ok) return refuse(`${e.command.error}.\n\n${GOAL_COMMAND_TABLE}`);
  const cmd = e.command.command;
  if (cmd.name === 'help') return done({ actions: [reply(GOAL_COMMAND_TABLE)] });
  if (cmd.name === 'start') {
    if (e.isPullRequest) return refuse('`/goal start` works on issues; on a goal pull request use `/goal resume`.');
    if (!facts.config) throw new Error('decideCommand: /goal start needs the repository config');
    if (!facts.config.ok) return { actions: [{ type: 'react', content: 'eyes' }, invalidConfigComment(facts.config, e.issue.number), { type: 'react', content: 'confused' }] };
    const start = decideStart(e, { existing: facts.goal, running: facts.running ?? false });
    return 'refusal' in start ? refuse(start.refusal) : done(start);
  }
  const goal = facts.goal;
  if (!goal?.meta.github) return refuse(NO_GOAL);
  if (isMerged(goal.meta) && cmd.name !== 'status') return refuse(doneRefusal(goal.meta));
  const applied = apply(goal, cmd, facts.issueBody, facts.running ?? false);
  return 'refusal' in applied ? refuse(applied.refusal) : done({ key: goal.key, actions: applied.actions });
}

/** A command's effect on an existing goal, or a refusal for the user. */
function apply(goal: GoalView, cmd: Exclude<GoalCommand, { name: 'help' | 'start' }>, issueBody: string | undefined, running: boolean): { refusal: string } | { actions: Action[] } {
  const taskExists = (id: string) => goal.spec.tasks.some((t) => t.id === id);
  const accept = () => acceptSpec({ goalId: goal.key.goalId, issueBody, extraTasks: goal.meta.extraTasks, github: goal.meta.github, running });
  const run: Action = { type: 'schedule', mode: 'run', priority: goal.priority };
  const status: Action = { type: 'schedule', mode: 'status', priority: goal.priority };
  switch (cmd.name) {
    case 'plan':
      return { actions: [...accept(), { type: 'setMeta', patch: { planApproved: false } }, { type: 'schedule', mode: 'plan', priority: goal.priority }] };
    case 'approve': {
      if (cmd.taskId && !taskExists(cmd.taskId)) return { refusal: noTaskRefusal(cmd.taskId) };
      const approval: Action = cmd.taskId ? { type: 'updateTask', taskId: cmd.taskId, patch: { approved: true } } : { type: 'setMeta', patch: { planApproved: true } };
      // "go ahead" is newer than any pause
      // The approval first: an issue edit accepted here may drop the task from the ledger.
      return { actions: [approval, ...accept(), { type: 'setControl', control: null }, run] };
    }
    case 'pause':
    case 'stop':
      return { actions: pauseOrStop(goal, cmd.name, `${cmd.name === 'pause' ? 'paused' : 'stopped'} by a human`) };
    case 'resume':
    case 'retry':
      if (cmd.name === 'retry' && cmd.taskId && !taskExists(cmd.taskId)) return { refusal: noTaskRefusal(cmd.taskId) };
      return { actions: [...accept(), { type: 'setControl', control: null }, run] };
    case 'skip':
      if (!taskExists(cmd.taskId)) return { refusal: noTaskRefusal(cmd.taskId) };
      return { actions: [{ type: 'updateTask', taskId: cmd.taskId, patch: { status: 'skipped' } }, ...(isResting(goal) ? [{ type: 'setControl', control: null } as const, run] : [])] };
    case 'status':
      return { actions: [status] };
    case 'budget':
      return { actions: [{ type: 'setMeta', patch: { budgetUsd: cmd.usd } }, status] };
  }
}
