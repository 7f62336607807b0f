/**
 * The repository's own CI on a commit, as the steering policy sees it (forge-neutral): its check
 * runs and commit statuses, which of them branch protection requires, and what a failing one said.
 * Everything here came from other apps and from what a task wrote: untrusted text, quoted when shown.
 */

/** One check on a commit: a check run (another app's), or a commit status (its context). */
export interface RepoCheck {
  source: 'check_run' | 'status';
  /** The check run's name, or the status's context. */
  name: string;
  /** The check run's id, or the status's id. */
  id: number;
  /** The app that made the check run; null for a status. */
  appId: number | null;
  /** `github-actions` for a workflow job (its check run id is the job's id). */
  appSlug: string | null;
  completed: boolean;
  /**
   * A check run's conclusion (success, failure, neutral, cancelled, skipped, timed_out,
   * action_required, stale), or a status's state (success, failure, error, pending); null while
   * a check run is not completed.
   */
  conclusion: string | null;
  detailsUrl: string | null;
  /** A check run's output as its app wrote it; none for a status (its description is the title). */
  output: { title: string | null; summary: string | null; text: string | null } | null;
}

/** One annotation a failing check run wrote. */
export interface RepoCheckAnnotation {
  path: string;
  startLine: number;
  endLine: number;
  /** notice, warning or failure. */
  level: string;
  title: string | null;
  message: string;
}

/** What could be read about a failing check beyond its output: annotations, and an Actions job's log tail. */
export interface CheckFailureDetail {
  annotations: RepoCheckAnnotation[];
  /** The last lines of the job's log (an Actions job), timestamps and colours removed; absent when not readable. */
  logTail?: string;
}

/** Conclusions that fail a check; neutral, skipped and success do not, nor does a check that was superseded (stale). */
const FAILING = new Set(['failure', 'timed_out', 'cancelled', 'action_required', 'error']);

export const isFailing = (c: Pick<RepoCheck, 'completed' | 'conclusion'>): boolean => c.completed && c.conclusion !== null && FAILING.has(c.conclusion);

/**
 * Whether a check counts for the goal: branch protection's required checks when there are any
 * (matched by name or context), every check otherwise.
 */
export const counts = (c: Pick<RepoCheck, 'name'>, required: readonly string[] | null): boolean => required === null || required.length === 0 || required.includes(c.name);

/**
 * The repository's verdict on a commit, from its checks (our own already left out): `failing`
 * when a counted check failed, `pending` while a counted one runs, `passed` when every counted
 * one passed (a required check that has not appeared yet keeps it `pending`), `none` when nothing
 * counted exists yet.
 */
export type ChecksVerdict = 'failing' | 'pending' | 'passed' | 'none';

export function checksVerdict(checks: readonly RepoCheck[], required: readonly string[] | null): ChecksVerdict {
  const counted = checks.filter((c) => counts(c, required));
  if (counted.some(isFailing)) return 'failing';
  if (counted.some((c) => !c.completed)) return 'pending';
  if (counted.length === 0) return 'none';
  const missing = required?.some((name) => !counted.some((c) => c.name === name)) === true;
  return missing ? 'pending' : 'passed';
}
