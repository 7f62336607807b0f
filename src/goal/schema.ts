import { z } from 'zod';
import { BaselinePolicySchema } from './evidence.js';
import { LimitsSchema, RISK_LEVELS } from './limits.js';

// The limits are declared once, in limits.ts; these names stay importable from here.
export { type LimitsOverride, LimitsSchema, RISK_LEVELS, type Risk } from './limits.js';

export const TASK_ID_PATTERN = /^[A-Za-z0-9._-]+$/;
export const GOAL_ID_PATTERN = /^[a-z0-9-]+$/;
/** Ids end up in branch names (`goal/<goal_id>`), paths and log file names: keep them short. */
export const GOAL_ID_MAX = 64;
export const TASK_ID_MAX = 100;
const taskId = z.string().max(TASK_ID_MAX, `must be at most ${TASK_ID_MAX} characters`);

const command = z.string().trim().min(1, 'must be a non-empty command');
const globs = z.array(z.string().trim().min(1, 'must be a non-empty glob'));

export const AcceptanceCriterionSchema = z.union([
  z.string().trim().min(1),
  z.strictObject({
    description: z.string().trim().min(1).describe('What must be true when the goal is done.'),
    check: command.optional().describe('Command run by the final gate; exit 0 means the criterion holds.'),
  }),
]);
export type AcceptanceCriterionInput = z.infer<typeof AcceptanceCriterionSchema>;

export const TaskSchema = z.strictObject({
  id: taskId.regex(TASK_ID_PATTERN, 'must match [A-Za-z0-9._-]+').describe('Unique task id.'),
  title: z.string().trim().min(1).describe('One line: what the task achieves. Used as the commit subject.'),
  description: z.string().optional().describe('What to do, for the agent and the reader.'),
  dependencies: z.array(taskId).default([]).describe('Ids of the tasks that must be done first.'),
  mcp_tools: z.array(z.string()).optional().describe('Allowlist of tools the agent may use for this task.'),
  run: z
    .union([command, z.array(command)])
    .optional()
    .transform((v) => (v === undefined ? [] : typeof v === 'string' ? [v] : v))
    .describe('Deterministic shell steps run before the agent, in the sandbox.'),
  verification: command.describe('Shell command run in the sandbox; exit 0 means the task is done.'),
  max_retries: z.number().int().positive().optional().describe('Attempts allowed for this task.'),
  risk: z.enum(RISK_LEVELS).default('low').describe('Tasks above the configured max_risk wait for approval.'),
  requires_approval: z.boolean().default(false).describe('Wait for a human approval before this task runs.'),
  expect: z
    .enum(['red', 'green'])
    .optional()
    .describe("What the verification does before the task's change: `red` (default) it fails, and the task makes it pass; `green` it passes already, and the task must keep it passing (a refactor)."),
  verification_paths: globs
    .optional()
    .describe("Globs of files this task's verification depends on (beside the repo's `test_paths`): the task may add files there, not change or delete those at the goal's base."),
  may_edit_tests: z
    .boolean()
    .optional()
    .describe('Let this task change or delete existing test files (`test_paths`, `verification_paths`). Counts as risk `high`: it waits for approval when `max_risk` is below that.'),
});

export const GoalSpecSchema = z.strictObject({
  goal_id: z
    .string()
    .max(GOAL_ID_MAX, `must be at most ${GOAL_ID_MAX} characters`)
    .regex(GOAL_ID_PATTERN, 'must match [a-z0-9-]+')
    .optional()
    .describe('Stable id of the goal; derived from the issue number or file name when absent.'),
  objective: z.string().trim().min(1).describe('What the goal achieves, in one or two sentences.'),
  constraints: z.array(z.string()).default([]).describe('Invariants the agent is told and must keep.'),
  acceptance_criteria: z.array(AcceptanceCriterionSchema).default([]).describe('What must hold at the end.'),
  tasks: z.array(TaskSchema).min(1, 'a goal needs at least one task').describe('The task graph, in order.'),
  limits: LimitsSchema.optional(),
  verification_baseline: BaselinePolicySchema.optional().describe("Tightens the repo config's `verification_baseline` (off < warn < require_red); a looser value is ignored."),
  verification_paths: globs.optional().describe("Globs of files every task's verification depends on (beside the repo's `test_paths`): protected from the tasks as test files are."),
  verify_with_base_tests: z.boolean().optional().describe("Verify with the base's versions of the protected files restored over the task's tree (`true` only tightens the repo config)."),
});

export type GoalSpecInput = z.input<typeof GoalSpecSchema>;
export type ParsedGoalSpec = z.output<typeof GoalSpecSchema>;
export type TaskSpec = z.output<typeof TaskSchema>;

export interface AcceptanceCriterion {
  description: string;
  check?: string;
}

/** A validated spec with a resolved goal id and normalized criteria. */
export interface GoalSpec extends Omit<ParsedGoalSpec, 'goal_id' | 'acceptance_criteria'> {
  goal_id: string;
  acceptance_criteria: AcceptanceCriterion[];
}
