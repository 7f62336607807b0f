import { z } from 'zod';
import { CoreGoalMetaSchema, readMeta } from '../goal/meta.js';
import { GoalSpecSchema, TaskSchema } from '../goal/schema.js';

/**
 * Where a goal lives on GitHub: what the worker needs, taken from the webhook that started it.
 * Ledgers keep it under meta's `github` key (the App and a GitHub Action share it); another forge
 * adds its own home key next to it rather than reading these fields differently.
 */
export const GitHubGoalSchema = z.object({
  owner: z.string(),
  repo: z.string(),
  installationId: z.number().int(),
  issueNumber: z.number().int(),
  issueTitle: z.string(),
  cloneUrl: z.string().describe('`repository.clone_url` from the payload: https on GitHub, a path in tests.'),
  htmlUrl: z.string(),
  defaultBranch: z.string(),
  branch: z.string().describe('`goal/<issue-number>-<slug>`'),
  author: z.string(),
  assignees: z.array(z.string()),
});

/** What the issue body held when the goal was last accepted (started, resumed, approved, reviewed…). */
export const IssuePlanSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('spec') }),
  z.object({ kind: z.literal('none') }),
  z.object({ kind: z.literal('invalid'), errors: z.array(z.string()) }),
]);

export const PendingReviewSchema = z.object({ taskId: z.string(), prNumber: z.number().int(), reviewId: z.number().int() });

/** The GitHub App's keys of a goal's meta (see goal/meta.ts). */
export const GitHubGoalMetaSchema = CoreGoalMetaSchema.extend({
  github: GitHubGoalSchema.optional().describe('The issue, repository and installation of the goal.'),
  prNumber: z.number().int().optional().describe("The goal's pull request, once opened."),
  prUrl: z.string().optional(),
  merged: z.boolean().optional().describe('The pull request was merged: the goal is done and never runs again.'),
  statusCommentId: z.number().int().optional().describe('The status comment, edited in place.'),
  queueShown: z
    .object({ position: z.number().int().min(1), at: z.string(), refreshes: z.number().int().min(0).optional() })
    .optional()
    .describe("The place in the queue the status comment shows while the goal waits for a worker (the queue report); dropped when a status write shows the goal's state again."),
  checkRunId: z.number().int().optional().describe('The `goal-loop` check run on checkRunSha.'),
  lastCommandId: z
    .number()
    .int()
    .optional()
    .describe("A GitHub Action's goal: the newest `/goal` comment applied; a run applies the newer ones first (their own run may have been cancelled by the workflow's concurrency group)."),
  lastReviewId: z.number().int().optional().describe("A GitHub Action's goal: the newest review of its pull request applied (as lastCommandId)."),
  checkRunSha: z.string().optional(),
  planApproved: z.boolean().optional().describe('`/goal approve` accepted the plan.'),
  plannedSpec: GoalSpecSchema.optional().describe('The spec Claude wrote for an issue without a goal block.'),
  templatePosted: z.boolean().optional().describe('The goal-block template was posted once already.'),
  extraTasks: z.array(TaskSchema).optional().describe("Tasks added to the issue's plan by reviews, and by the repository's failing checks (`ci-<sha>`)."),
  checksAwaited: z
    .object({ sha: z.string(), since: z.string(), verdict: z.enum(['failing', 'pending', 'passed', 'none']).optional() })
    .optional()
    .describe("A finished goal's draft PR waits for the repository's checks on this head (since then): their completion, or the grace period with none, makes it ready."),
  baseMovedDuringRun: z.string().optional().describe('The base branch moved while the goal ran (its new tip): a run that ends complete runs again, and follows it.'),
  ciEscalatedSha: z.string().optional().describe("The head on which the repository's failing checks escalated the goal (past `max_ci_fixes`): escalated once per head."),
  pendingReviews: z.array(PendingReviewSchema).optional().describe('Reviews whose fix task is not checkpointed yet.'),
  issuePlan: IssuePlanSchema.optional().describe(
    "The issue body's plan, parsed where the goal was last accepted (start, plan, approve, resume, retry, review): `spec` = its ```goal block (plus the reviews' extraTasks) is the goal's spec in the ledger; `none` = no block (Claude's plannedSpec or the template applies); `invalid` = the block's errors.",
  ),
});
export type GitHubGoalMeta = z.infer<typeof GitHubGoalMetaSchema>;
export type GitHubGoal = z.infer<typeof GitHubGoalSchema>;

export const readGitHubMeta = (raw: Record<string, unknown>): GitHubGoalMeta => readMeta(GitHubGoalMetaSchema, raw);
