import { excerpt } from '../agent/scratchpad.js';
import { sanitizeUntrusted } from '../common/untrusted.js';
import type { TaskSnapshot } from '../goal/result.js';
import type { GoalRecord, TaskRecord } from '../ports/ledger.js';
import type { GoalSession, Turn } from './goal-session.js';
import { safeguardOf } from './limits-policy.js';

/** Command output is untrusted text: cleaned and bounded before it reaches the driving model. */
export function untrustedOutput(text: string, chars = 4000): string {
  return excerpt(sanitizeUntrusted(text).trim(), Math.floor(chars * 0.3), Math.floor(chars * 0.7));
}

const HOW_TO_WORK =
  'Make the change by editing files under `workspace` (a private clone on the goal branch). Do not commit, push or switch ' +
  'branches there: call task_complete with this task_id when you are done, and the loop runs the verification in its ' +
  'sandbox, commits a checkpoint if it passes, or rolls the workspace back and hands the task out again with the failure.';

/** The answer of `next_task` (and the `next` part of `task_complete`). */
export async function turnPayload(session: GoalSession, turn: Turn): Promise<Record<string, unknown>> {
  if (turn.kind === 'build') return buildPayload(session, turn.pending);
  return stopPayload(session);
}

async function buildPayload(session: GoalSession, pending: Extract<Turn, { kind: 'build' }>['pending']): Promise<Record<string, unknown>> {
  const { input } = pending;
  const { task, goal } = input;
  const limits = session.limits();
  const goalRecord = await session.goal();
  const tasks = await session.tasks();
  return {
    action: 'BUILD',
    goal_id: goal.goal_id,
    task: {
      id: task.id,
      title: task.title,
      ...(task.description ? { description: task.description } : {}),
      verification: task.verification,
      dependencies: task.dependencies,
      risk: task.risk,
      ...(task.mcp_tools ? { mcp_tools: task.mcp_tools } : {}),
    },
    attempt: input.attempt,
    max_attempts: task.max_retries ?? limits.max_retries,
    workspace: input.workspaceDir,
    branch: session.branch,
    ...(input.previousFailure !== undefined ? { previous_failure: untrustedOutput(input.previousFailure) } : {}),
    objective: goal.objective,
    constraints: goal.constraints,
    acceptance_criteria: goal.acceptance_criteria.map((c) => c.description),
    done: input.done.map((d) => ({ task_id: d.taskId, sha: d.sha })),
    remaining: tasks.filter((t) => t.status !== 'done' && t.status !== 'skipped' && t.taskId !== task.id).length,
    budget: budgetOf(goalRecord, limits),
    how_to_work: HOW_TO_WORK,
  };
}

async function stopPayload(session: GoalSession): Promise<Record<string, unknown>> {
  const goal = await session.goal();
  const tasks = await session.tasks();
  const state = goal?.state ?? 'INITIALIZING';
  const safeguard = safeguardOf(state, goal?.stopReason);
  const escalation = session.lastResult?.escalation ?? escalationFromTasks(tasks);
  const waiting = tasks.filter((t) => t.status === 'awaiting_approval').map((t) => t.taskId);
  return {
    action: 'STOP',
    goal_id: session.key.goalId,
    status: state,
    safeguard,
    reason: goal?.stopReason ?? (state === 'LOOP_COMPLETE' ? 'every task verified and the final gate passed' : 'the goal is not running'),
    ...(escalation && state === 'ESCALATED' ? { escalation: { ...escalation, last_error: untrustedOutput(escalation.last_error) } } : {}),
    ...(waiting.length > 0 ? { awaiting_approval: waiting } : {}),
    tasks_completed: tasks.filter((t) => t.status === 'done' || t.status === 'skipped').length,
    tasks_total: tasks.length,
    branch: session.branch,
    checkpoints: tasks.filter((t) => t.checkpointSha).map((t) => ({ task_id: t.taskId, sha: t.checkpointSha })),
    budget: budgetOf(goal, session.limits()),
    next_step: nextStep(safeguard, waiting),
  };
}

function nextStep(safeguard: string, waiting: string[]): string {
  switch (safeguard) {
    case 'complete':
      return 'Nothing: the goal is done. The goal branch holds one verified checkpoint per task.';
    case 'approval':
      return `A human must approve ${waiting.join(', ') || 'the task'}: goal_config with approve asks them (or start the server with --approve <task-id>).`;
    case 'escalated':
      return 'A task ran out of attempts. Tell the human; after they looked, goal_config with action "resume" (which asks them) retries from the last checkpoint.';
    case 'paused':
      return 'goal_config with action "resume" continues from the last checkpoint.';
    case 'internal_error':
      return 'goal-loop hit an internal error (see its log on stderr); goal_config with action "resume" retries from the last checkpoint.';
    default:
      return 'A safeguard stopped the goal. A human may raise the budget (goal_config asks them) and resume.';
  }
}

/** What became of the attempt the driver just reported (the first part of `task_complete`). */
export async function attemptOutcome(session: GoalSession, taskId: string, attempt: number, turn: Turn): Promise<Record<string, unknown>> {
  const attempts = (await session.attempts(taskId)).filter((a) => a.attempt === attempt);
  const task = (await session.tasks()).find((t) => t.taskId === taskId);
  const verify = attempts.find((a) => a.phase === 'verify');
  const refused = attempts.find((a) => a.phase === 'checkpoint' && !a.passed);
  const verification = verify ? { passed: verify.passed, exit_code: verify.exitCode, output: untrustedOutput(verify.output, verify.passed ? 1500 : 4000) } : undefined;
  let decision: string;
  if (task?.status === 'done' && task.checkpointSha && verify?.passed) decision = 'CHECKPOINTED';
  else if (turn.kind === 'build' && turn.pending.input.task.id === taskId) decision = verify || refused ? 'REPAIR' : 'RETRY';
  else if (task?.status === 'escalated') decision = 'ESCALATED';
  else decision = 'STOPPED';
  return {
    task_id: taskId,
    attempt,
    decision,
    ...(verification ? { verification } : { verification: 'not run' }),
    ...(refused ? { checkpoint_refused: untrustedOutput(refused.output) } : {}),
    ...(decision === 'CHECKPOINTED' ? { checkpoint: task!.checkpointSha } : {}),
  };
}

function budgetOf(goal: GoalRecord | undefined, limits: ReturnType<GoalSession['limits']>) {
  return {
    iterations: goal?.counters.iterations ?? 0,
    max_iterations: limits.max_iterations,
    cost_usd: goal?.counters.cost_usd ?? 0,
    cost_cap_usd: limits.cost_cap_usd,
    error_threshold: limits.error_threshold,
    max_wall_minutes: limits.max_wall_minutes,
    max_retries: limits.max_retries,
    max_risk: limits.max_risk,
  };
}

function escalationFromTasks(tasks: TaskRecord[]) {
  const t = tasks.find((x) => x.status === 'escalated');
  return t ? { task_id: t.taskId, attempts: t.attempts, last_error: t.lastError ?? '' } : undefined;
}

/** One task of `goal_status`. */
export function taskLine(t: TaskRecord, live?: TaskSnapshot): Record<string, unknown> {
  return {
    id: t.taskId,
    title: t.title,
    status: live?.status ?? t.status,
    attempts: t.attempts,
    ...(t.checkpointSha ? { checkpoint: t.checkpointSha } : {}),
    ...(t.lastError && t.status !== 'done' ? { last_error: untrustedOutput(t.lastError, 600) } : {}),
    ...(t.approved ? { approved: true } : {}),
  };
}
