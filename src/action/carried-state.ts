import { gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { EVIDENCE } from '../goal/evidence.js';
import { SpecValidationError, validateGoalSpec } from '../goal/parse.js';
import type { GoalSpec } from '../goal/schema.js';
import { GOAL_STATES, TASK_STATUSES } from '../goal/states.js';
import type { AttemptEntry, AttemptLog, AttemptLogEntry } from '../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import { GitHubGoalSchema } from '../steering/goal-meta.js';

/**
 * A GitHub Action's run keeps nothing on its runner: what the goal's record holds that GitHub does
 * not (the spec accepted, the state, each task's attempts, what was spent, the attempt record, the
 * run working it) is carried in the goal's status comment, as the comment's last line:
 * `<!-- goal-loop:state 1 <base64 of gzipped JSON> -->`. The next run reads it back (only from a
 * comment of goal-loop's own writer, see rebuild.ts) and seeds an empty ledger with it; checkpoints
 * come from the goal branch itself. It is validated like any input: a comment can be edited by
 * anyone with write access.
 */

export const CARRIED_STATE_PREFIX = '<!-- goal-loop:state 1 ';
const SUFFIX = ' -->';
/** GitHub's limit on a comment body, in characters. */
const COMMENT_MAX = 65_536;
/** Room the carried line may take at most, whatever the report's size. */
const CARRIED_MAX = 24_000;
/** An output tail kept in the carried attempt record. */
const TAIL_CHARS = 1500;

const UsageSchema = z.object({ input: z.number(), output: z.number(), cache_read: z.number(), cache_write: z.number() });

const CarriedEntrySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('step'), command: z.string(), exitCode: z.number().nullable(), durationMs: z.number(), timedOut: z.boolean(), stalled: z.literal(true).optional(), tail: z.string() }),
  z.object({
    kind: z.literal('baseline'),
    command: z.string(),
    exitCode: z.number().nullable(),
    durationMs: z.number(),
    timedOut: z.boolean(),
    passed: z.boolean(),
    tail: z.string(),
    reused: z.boolean().optional(),
    expect: z.enum(['red', 'green']),
    policy: z.enum(['warn', 'require_red']),
  }),
  z.object({ kind: z.literal('verify'), command: z.string(), exitCode: z.number().nullable(), durationMs: z.number(), timedOut: z.boolean(), passed: z.boolean(), tail: z.string() }),
  // `evidence`: absent in a record carried before it existed; a value not one of the three is refused.
  z.object({ kind: z.literal('checkpoint'), sha: z.string(), files: z.number(), insertions: z.number(), deletions: z.number(), stat: z.string(), evidence: z.enum(EVIDENCE).optional() }),
  z.object({
    kind: z.literal('end'),
    outcome: z.enum(['passed', 'failed', 'timeout', 'turn_limit', 'budget', 'refused', 'infra', 'interrupted']),
    reason: z.string(),
    tokens: UsageSchema,
    costUsd: z.number(),
    durationMs: z.number(),
  }),
]);

export const CarriedStateSchema = z.object({
  goalId: z.string().min(1),
  /** Validated as a spec is (schema and graph) when read: validateGoalSpec. */
  spec: z.unknown(),
  branch: z.string().min(1),
  priority: z.string(),
  state: z.enum(GOAL_STATES),
  stopReason: z.string().nullable(),
  control: z.enum(['pause', 'stop']).nullable(),
  counters: z.object({ iterations: z.number(), errors: z.number(), errors_recovered: z.number(), tokens: UsageSchema, cost_usd: z.number() }),
  tasks: z.array(
    z.object({
      taskId: z.string(),
      status: z.enum(TASK_STATUSES),
      attempts: z.number().int().min(0),
      checkpointSha: z.string().nullable(),
      lastError: z.string().nullable(),
      approved: z.boolean(),
    }),
  ),
  /** The goal's GitHub home as it was accepted (its branch keeps the issue's title of then). */
  github: GitHubGoalSchema.pick({ issueNumber: true, issueTitle: true, branch: true, author: true, assignees: true }),
  /** The rest of the goal's meta (plannedSpec, extraTasks, pendingReviews, prNumber…), read through its schema where used. */
  meta: z.record(z.string(), z.unknown()),
  attempts: z.array(z.object({ taskId: z.string(), attempt: z.number().int(), at: z.string(), entry: CarriedEntrySchema })),
  /** The run working the goal (`GITHUB_RUN_ID`, attempt), or null when none is. */
  runner: z.object({ runId: z.string(), attempt: z.string() }).nullable(),
});
export type CarriedState = Omit<z.infer<typeof CarriedStateSchema>, 'spec'> & { spec: GoalSpec };

/** Meta keys never carried: the run's own wiring (rebuilt from the environment) or transient. */
const NOT_CARRIED = new Set(['github', 'queueShown']);

/** The goal's record in `ledger`, as the status comment carries it. */
export async function carriedStateOf(ledger: GoalLedger & Pick<AttemptLog, 'listAttemptEntries'>, key: GoalKey, runner: CarriedState['runner']): Promise<CarriedState | undefined> {
  const goal = await ledger.getGoal(key);
  const github = GitHubGoalSchema.safeParse(goal?.meta.github);
  if (!goal || !github.success) return undefined;
  const tasks = await ledger.listTasks(key);
  const entries = await ledger.listAttemptEntries(key);
  return {
    goalId: key.goalId,
    spec: goal.spec,
    branch: goal.branch,
    priority: goal.priority,
    state: goal.state,
    stopReason: goal.stopReason,
    control: goal.control,
    counters: goal.counters,
    tasks: tasks.map((t) => ({ taskId: t.taskId, status: t.status, attempts: t.attempts, checkpointSha: t.checkpointSha, lastError: t.lastError, approved: t.approved })),
    github: { issueNumber: github.data.issueNumber, issueTitle: github.data.issueTitle, branch: github.data.branch, author: github.data.author, assignees: github.data.assignees },
    meta: Object.fromEntries(Object.entries(goal.meta).filter(([k]) => !NOT_CARRIED.has(k))),
    attempts: entries.flatMap((e) => carriedEntry(e)),
    runner,
  };
}

/** The attempt record as carried: what the reports show of an attempt (turns are left to the run's logs), tails bounded. */
function carriedEntry(e: AttemptLogEntry): CarriedState['attempts'] {
  const keep = (entry: AttemptEntry) => [{ taskId: e.taskId, attempt: e.attempt, at: e.at, entry: entry as CarriedState['attempts'][number]['entry'] }];
  const x = e.entry;
  switch (x.kind) {
    case 'step':
    case 'baseline':
    case 'verify':
      return keep({ ...x, tail: x.tail.slice(-TAIL_CHARS), command: x.command.slice(0, 500) });
    case 'checkpoint':
      return keep({ ...x, stat: x.stat.slice(0, TAIL_CHARS) });
    case 'end':
      return keep({ ...x, reason: x.reason.slice(0, 500) });
    default:
      return [];
  }
}

/**
 * The carried line for a status comment whose report is `body`: within what GitHub takes for the
 * whole comment. When the record does not fit, the attempts' output goes first (tails cut short),
 * then the oldest attempts' entries but their baselines, checkpoints and ends (what the reports'
 * evidence and outcomes come from), then those too, oldest first; the goal's spec, state and spend
 * always stay (they are what a run must not lose).
 */
export function carriedLine(state: CarriedState, body: string): string {
  const room = Math.min(CARRIED_MAX, COMMENT_MAX - body.length - 2 - CARRIED_STATE_PREFIX.length - SUFFIX.length);
  let attempts = state.attempts;
  for (let pass = 0; ; pass++) {
    const encoded = encode({ ...state, attempts });
    if (encoded.length <= room || attempts.length === 0) return `${CARRIED_STATE_PREFIX}${encoded}${SUFFIX}`;
    attempts = pass === 0 ? attempts.map((a) => ({ ...a, entry: withoutTail(a.entry) })) : withoutOldest(attempts);
  }
}

/** Entries the reports' evidence and outcomes are read from: left out after every other entry. */
const KEPT_LONGER = new Set(['baseline', 'checkpoint', 'end']);

/** The record without its oldest quarter of other entries; once only those kept longer are left, of those. Always shorter. */
function withoutOldest(attempts: CarriedState['attempts']): CarriedState['attempts'] {
  const others = attempts.filter((a) => !KEPT_LONGER.has(a.entry.kind));
  if (others.length === 0) return attempts.slice(Math.ceil(attempts.length / 4));
  const dropped = new Set(others.slice(0, Math.ceil(others.length / 4)));
  return attempts.filter((a) => !dropped.has(a));
}

function withoutTail(e: CarriedState['attempts'][number]['entry']): CarriedState['attempts'][number]['entry'] {
  if (e.kind === 'step' || e.kind === 'baseline' || e.kind === 'verify') return { ...e, tail: e.tail.slice(-200) };
  if (e.kind === 'checkpoint') return { ...e, stat: '' };
  return e;
}

const encode = (state: CarriedState) => gzipSync(Buffer.from(JSON.stringify(state), 'utf8')).toString('base64');

/** The state a status comment carries; undefined when it carries none, or one that is not valid (why is given). */
export function readCarriedState(body: string): { state?: CarriedState; problem?: string } {
  const lines = body.replace(/\r\n?/g, '\n').trimEnd().split('\n');
  const line = lines.at(-1) ?? '';
  if (!line.startsWith(CARRIED_STATE_PREFIX) || !line.endsWith(SUFFIX)) return {};
  const data = line.slice(CARRIED_STATE_PREFIX.length, -SUFFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data)) return { problem: 'the carried state is not base64' };
  let json: unknown;
  try {
    // Bounded: a comment is at most 64 KiB, and what it inflates to at most 8 MiB.
    json = JSON.parse(gunzipSync(Buffer.from(data, 'base64'), { maxOutputLength: 8 * 1024 * 1024 }).toString('utf8'));
  } catch (err) {
    return { problem: `the carried state cannot be read (${(err as Error).message})` };
  }
  const parsed = CarriedStateSchema.safeParse(json);
  if (!parsed.success) return { problem: `the carried state is not valid (${parsed.error.issues[0]?.message ?? 'schema'})` };
  try {
    const spec = validateGoalSpec(parsed.data.spec, { source: 'the carried spec', defaultGoalId: parsed.data.goalId });
    return { state: { ...parsed.data, spec } };
  } catch (err) {
    if (!(err instanceof SpecValidationError)) throw err;
    return { problem: `the carried spec is not valid (${err.message})` };
  }
}

/** The key for a GoalSnapshot-independent edit trigger: the spend, in steps worth a write. */
export function spendKey(iterations: number, costUsd: number): string {
  return `${iterations}:${Math.floor(costUsd * 20)}`;
}

/** Writes a carried state into an empty ledger: the goal, its tasks, its spend, its attempt record. */
export async function seedLedger(ledger: GoalLedger & Pick<AttemptLog, 'appendAttemptEntry'>, key: GoalKey, state: CarriedState, github: z.infer<typeof GitHubGoalSchema>): Promise<void> {
  await ledger.upsertGoal(key, { spec: state.spec, branch: state.branch, priority: state.priority });
  const known = new Set((await ledger.listTasks(key)).map((t) => t.taskId));
  await ledger.recordChange(key, {
    transitions: [{ to: state.state, event: 'rebuilt', detail: 'from the status comment', stopReason: state.stopReason }],
    tasks: state.tasks
      .filter((t) => known.has(t.taskId))
      .map((t) => ({ taskId: t.taskId, patch: { status: t.status, attempts: t.attempts, checkpointSha: t.checkpointSha, lastError: t.lastError, approved: t.approved } })),
    counters: state.counters,
    meta: { ...state.meta, github },
  });
  if (state.control) await ledger.setControl(key, state.control);
  for (const a of state.attempts) await ledger.appendAttemptEntry(key, a.taskId, a.attempt, a.entry as AttemptEntry);
}
