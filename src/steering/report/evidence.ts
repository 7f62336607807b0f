import type { Evidence } from '../../goal/evidence.js';
import type { BaselineEntry } from '../../ports/attempt-log.js';

/**
 * What a task's verification proves (DESIGN.md §10), in words for someone who has not read the
 * design: the same words in the terminal (`goal-loop logs`), the PR, the check run and the status
 * comment. Only our own text: an evidence value read from the record is looked up, never quoted.
 */

interface EvidenceWords {
  /** As a badge: `red → green`. */
  short: string;
  /** What it means, as the rest of a sentence about the task. */
  meaning: string;
}

const WORDS: Readonly<Record<Evidence, EvidenceWords>> = {
  'red->green': { short: 'red → green', meaning: "its verification failed before the task's change and passes with it" },
  'green->green': { short: 'green → green', meaning: "its verification passed before the task's change too" },
  unchecked: { short: 'unchecked', meaning: "its verification was not run before the task's change (verification_baseline: off)" },
};

/** The words for an evidence value; undefined for none, or a value that is not one (the record is untrusted). */
export function evidenceWords(e: unknown): EvidenceWords | undefined {
  return typeof e === 'string' && Object.hasOwn(WORDS, e) ? WORDS[e as Evidence] : undefined;
}

/** The warning of a task whose verification passed before it ran though it expects it to fail. */
export const GREEN_BEFORE = 'its verification passed before the task ran';
/** Why that matters, for the line that explains it. */
export const GREEN_BEFORE_WHY = "so it cannot show that the task's change works";

/** The task expects its verification to fail before its change (`expect: red`), and it passed. */
export function greenBefore(b: BaselineEntry | undefined): boolean {
  return b?.passed === true && b.expect !== 'green';
}

/** What the task's evidence is, from its last checkpoint and its baseline (record.ts taskProof). */
export interface TaskProof {
  /** The evidence of its last checkpoint; absent without one, or in a record older than evidence. */
  evidence?: Evidence;
  /** Its last baseline (before its first attempt); absent when none ran or none is recorded. */
  baseline?: BaselineEntry;
  /** Its verification passed before it ran, though it expects it to fail: warned about everywhere. */
  greenBefore: boolean;
}

/**
 * The evidence as a short piece of markdown (our words only): `` `red → green` ``, the warning
 * `` ⚠ `green → green`: its verification passed before the task ran ``, `` `green → green` (as
 * expected) `` for `expect: green`, or `` `unchecked` ``; empty when the record says nothing.
 * `done`: the task has its checkpoint (a task not done has a warning but no evidence yet).
 */
export function evidenceMarkdown(p: TaskProof | undefined, done = true): string {
  if (!p) return '';
  const w = done ? evidenceWords(p.evidence) : undefined;
  if (p.greenBefore) return `⚠ ${w ? `\`${w.short}\`: ` : ''}${GREEN_BEFORE}`;
  if (!w) return '';
  return p.evidence === 'green->green' && p.baseline?.expect === 'green' ? `\`${w.short}\` (as expected: \`expect: green\`)` : `\`${w.short}\``;
}

/** A line explaining the badges, for a report that shows them (a newcomer does not know the words). */
export function evidenceLegend(shown: Iterable<Evidence | undefined>): string | undefined {
  const seen = new Set([...shown].filter((e): e is Evidence => evidenceWords(e) !== undefined));
  if (seen.size === 0) return undefined;
  const parts = (Object.keys(WORDS) as Evidence[]).filter((e) => seen.has(e)).map((e) => `\`${WORDS[e].short}\`: ${WORDS[e].meaning}`);
  return `**Evidence** — ${parts.join('; ')}.`;
}
