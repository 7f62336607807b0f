import type { EffectInput } from '../ports/outbox.js';

/**
 * The issue-steered goal's outbox effects, besides the loop's (loop/outbox.ts): a comment on the
 * issue (posted once, found again by its marker), and `sync`, which makes the status comment and
 * the state label show the goal's state in the ledger. The forge's wiring performs them.
 */
export type IssueEffect = { kind: 'comment'; payload: { issueNumber: number; body: string } } | { kind: 'sync'; payload: Record<string, never> };

export const SYNC: EffectInput = { kind: 'sync', payload: {} } satisfies IssueEffect;
