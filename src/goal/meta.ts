import { z } from 'zod';
import { LimitsSchema } from './schema.js';

/**
 * A goal's facts beyond its spec, state and counters live in the ledger as one JSON object,
 * `meta`, shallow-merged by `setMeta`. These are the keys every wiring shares; the GitHub App
 * extends them (steering/goal-meta.ts). Read meta through a schema, never by casting.
 */
export const CoreGoalMetaSchema = z.looseObject({
  controlReason: z.string().optional().describe("Why the newest pause or stop was asked for; becomes the goal's stop reason."),
  budgetUsd: z.number().min(0).optional().describe("A maintainer's `/goal budget`: a cost cap that may raise what the spec may only lower."),
  mcp_limits: LimitsSchema.optional().describe('Limits an MCP client tightened for this goal.'),
});
export type CoreGoalMeta = z.infer<typeof CoreGoalMetaSchema>;

/**
 * Parses a goal's meta with `schema`. A key whose value does not fit (an older release wrote it,
 * or someone edited the database) is dropped and reported, never trusted as it is.
 */
export function readMeta<S extends z.ZodObject>(schema: S, raw: Record<string, unknown>, onDropped?: (key: string, problem: string) => void): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const bad = new Set<string>();
  for (const issue of parsed.error.issues) {
    const key = String(issue.path[0]);
    bad.add(key);
    onDropped?.(key, issue.message);
  }
  return schema.parse(Object.fromEntries(Object.entries(raw).filter(([k]) => !bad.has(k))));
}

export const readCoreMeta = (raw: Record<string, unknown>): CoreGoalMeta => readMeta(CoreGoalMetaSchema, raw);
