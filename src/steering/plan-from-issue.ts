import { sanitizeUntrusted } from '../common/untrusted.js';
import { extractGoalBlock, formatSpecError, parseGoalSpec, SpecValidationError, validateGoalSpec } from '../goal/parse.js';
import type { GoalSpec, TaskSpec } from '../goal/schema.js';

export type IssuePlan = { kind: 'spec'; spec: GoalSpec } | { kind: 'none' } | { kind: 'invalid'; errors: string[] };

/**
 * The goal spec of an issue: its ```goal block (the issue number is the goal id on GitHub),
 * plus the tasks reviews added. Issue text is untrusted: hidden content is stripped first.
 */
export function planFromIssue(body: string, goalId: string, extraTasks: unknown, plannedSpec?: unknown): IssuePlan {
  const clean = sanitizeUntrusted(body);
  const hasBlock = extractGoalBlock(clean) !== undefined;
  if (!hasBlock && !plannedSpec) return { kind: 'none' };
  try {
    // A goal block in the issue always wins over a plan Claude wrote earlier.
    const spec = hasBlock
      ? parseGoalSpec(clean, { source: `issue #${goalId}.md`, defaultGoalId: goalId })
      : validateGoalSpec(plannedSpec, { source: `plan for issue #${goalId}`, defaultGoalId: goalId });
    const extra = Array.isArray(extraTasks) ? (extraTasks as TaskSpec[]).filter((t) => !spec.tasks.some((s) => s.id === t.id)) : [];
    const merged = extra.length > 0 ? validateGoalSpec({ ...spec, goal_id: goalId, tasks: [...spec.tasks, ...extra] }, { source: `issue #${goalId}` }) : spec;
    return { kind: 'spec', spec: { ...merged, goal_id: goalId } };
  } catch (err) {
    if (err instanceof SpecValidationError) return { kind: 'invalid', errors: err.errors.map(formatSpecError) };
    throw err;
  }
}

export const TEMPLATE_COMMENT = `goal-loop needs a plan: this issue has no \`\`\`goal block, and no model is configured to write one. Add a block like this to the issue body, then comment \`/goal start\`:

\`\`\`\`markdown
\`\`\`goal
objective: What the goal achieves, in a sentence
acceptance_criteria:
  - description: The test suite passes
    check: npm test
tasks:
  - id: task-01
    title: First step
    run: ["npm run generate"]        # optional deterministic steps
    verification: npm test -- first  # exit 0 = done
  - id: task-02
    title: Second step
    dependencies: [task-01]
    verification: npm run lint
\`\`\`
\`\`\`\``;
