import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { LimitsOverride } from '../goal/schema.js';
import { type GoalSession, SessionError } from './goal-session.js';
import { confirmWithHuman } from './human.js';
import { LIVE_LIMITS, loosenedKeys } from './limits-policy.js';

export interface ConfigRequest {
  action?: 'pause' | 'resume' | 'stop';
  approve?: string[];
  limits?: LimitsOverride;
}

/** States a run may not leave without a human: the loop itself decided to stop there. */
const HUMAN_RESUMES = new Set(['ESCALATED', 'STOPPED']);

/**
 * Applies a `goal_config` (or the implicit resume of `goal_start`). What only tightens the
 * loop (pause, stop, a lower budget) is done at once. What loosens it (approving a task, a
 * higher budget, resuming after an escalation or a stop) is first confirmed by the human at
 * the client, in one question; when they cannot be asked or say no, nothing is changed.
 * Returns one line per change.
 */
export async function configureGoal(server: Server, session: GoalSession, req: ConfigRequest, opts: { fromStart?: boolean } = {}): Promise<string[]> {
  const goal = await session.goal();
  const state = goal?.state ?? 'INITIALIZING';
  const limits = session.limits();
  const loosened = req.limits ? loosenedKeys(limits, req.limits) : [];
  const approve = req.approve ?? [];
  const restartAfterStop = req.action === 'resume' && !session.running && HUMAN_RESUMES.has(state);

  const asks: string[] = [];
  if (loosened.length > 0) asks.push(`raise ${loosened.map((k) => `${k} from ${limits[k]} to ${req.limits![k]}`).join(', ')}`);
  if (approve.length > 0) {
    const titles = approve.map((id) => {
      const t = session.spec.tasks.find((x) => x.id === id);
      return t ? `${id} "${t.title}" (risk ${t.risk})` : id;
    });
    asks.push(`approve ${titles.join(', ')}`);
  }
  if (restartAfterStop) asks.push(`resume it after it stopped (${state}: ${goal?.stopReason ?? 'no reason recorded'}), with fresh attempts per task`);
  if (asks.length > 0) {
    const answer = await confirmWithHuman(
      server,
      `The agent driving goal "${session.key.goalId}" (${session.key.repo}) asks to ${asks.join('; and to ')}. Allow?`,
      "A human can approve tasks with `goal-loop mcp --approve <task-id>` in the server's configuration, raise budgets in .github/goal-loop.yml (or the server's --config file), and resume with `goal-loop run`.",
    );
    if (!answer.ok) throw new SessionError(`nothing changed: ${answer.reason}`);
  }

  const changes: string[] = [];
  if (req.limits && Object.keys(req.limits).length > 0) {
    await session.setLimits(req.limits);
    for (const [k, v] of Object.entries(req.limits)) {
      const key = k as keyof typeof limits;
      if (v !== undefined) changes.push(`${k}: ${limits[key]} -> ${v} (${LIVE_LIMITS.has(key) || !session.running ? 'in force now' : 'from the next run'})`);
    }
  }
  if (approve.length > 0) {
    await session.approve(approve);
    changes.push(`approved: ${approve.join(', ')}`);
  }

  const action = req.action ?? (approve.length > 0 && state === 'AWAITING_APPROVAL' ? 'resume' : undefined);
  if (action === 'pause' || action === 'stop') {
    if (!session.running) changes.push(`not running (${state}): nothing to ${action}`);
    else {
      await session.interrupt(action);
      changes.push(action === 'pause' ? 'paused: the attempt in progress was rolled back' : 'stopped: the attempt in progress was rolled back');
    }
  } else if (action === 'resume') {
    if (session.running) changes.push(opts.fromStart ? 'already running' : 'already running: nothing to resume');
    else if (state === 'LOOP_COMPLETE') changes.push('already complete');
    else {
      session.begin();
      changes.push(state === 'INITIALIZING' ? 'started' : `resumed from ${state}`);
    }
  }
  return changes;
}
