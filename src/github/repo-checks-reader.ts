import type { CheckFailureDetail, RepoCheck, RepoCheckAnnotation } from '../steering/repo-checks.js';
import type { Octokit } from './github-forge.js';
import { CHECK_NAME } from './goal-check-run.js';

/**
 * Reads the repository's own CI on GitHub: the check runs (other apps') and commit statuses on a
 * commit, the checks its base branch requires, and what a failing one said (annotations, an
 * Actions job's log tail). Reads only; each is as few requests as GitHub's paging allows.
 */

/** How many annotations of a failing check are read. */
export const MAX_ANNOTATIONS = 50;
/** How many non-empty lines of a job's log are kept, and at most how many characters. */
export const LOG_TAIL_LINES = 60;
export const LOG_TAIL_CHARS = 6_000;

const PER_PAGE = 100;

const statusOf = (err: unknown): number | undefined => {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
};

/** A read the installation may not be allowed, or of something gone: `fallback` for those statuses, a rejection otherwise. */
async function unless<T>(statuses: readonly number[], read: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (statuses.includes(statusOf(err) ?? -1)) return fallback;
    throw err;
  }
}

async function bestEffort<T>(read: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await read();
  } catch {
    return fallback;
  }
}

/**
 * The checks on `sha`: each check run's latest (a re-run hides the run it replaced), other apps'
 * only (`ownAppId`'s are goal-loop's own), then each status context's latest. A check run counts
 * only when its suite came from a push to a branch of this repository: a fork's pull request
 * whose head is the same commit runs the fork's code, which may write anything into its checks,
 * and GitHub gives its suite no head branch.
 */
export async function readHeadChecks(o: Octokit, owner: string, repo: string, sha: string, ownAppId: number | undefined): Promise<RepoCheck[]> {
  const [runs, suites, statuses] = await Promise.all([
    o.paginate(o.rest.checks.listForRef, { owner, repo, ref: sha, filter: 'latest', per_page: PER_PAGE }),
    o.paginate(o.rest.checks.listSuitesForRef, { owner, repo, ref: sha, per_page: PER_PAGE }),
    // An installation that has not accepted `statuses: read` yet reads no statuses (403), rather than failing every event.
    unless([403], () => readStatuses(o, owner, repo, sha), []),
  ]);
  const pushed = new Set(suites.filter((s) => typeof s.head_branch === 'string' && s.head_branch !== '').map((s) => s.id));
  const checks: RepoCheck[] = runs
    .filter((r) => (ownAppId === undefined || r.app?.id !== ownAppId) && pushed.has(r.check_suite?.id ?? -1))
    .map((r) => ({
      source: 'check_run',
      name: r.name,
      id: r.id,
      appId: r.app?.id ?? null,
      appSlug: r.app?.slug ?? null,
      completed: r.status === 'completed',
      conclusion: r.status === 'completed' ? (r.conclusion ?? null) : null,
      detailsUrl: r.details_url ?? null,
      output: { title: r.output.title ?? null, summary: r.output.summary ?? null, text: r.output.text ?? null },
    }));
  return [...checks, ...statuses];
}

/** Each status context's latest, as the combined status keeps them; it pages its statuses (total_count counts them all). */
async function readStatuses(o: Octokit, owner: string, repo: string, sha: string): Promise<RepoCheck[]> {
  const all: RepoCheck[] = [];
  for (let page = 1; ; page++) {
    const { data } = await o.rest.repos.getCombinedStatusForRef({ owner, repo, ref: sha, per_page: PER_PAGE, page });
    for (const s of data.statuses) {
      // A status says only its description: its title, as the event's own check has it.
      const output = s.description ? { title: s.description, summary: null, text: null } : null;
      all.push({ source: 'status', name: s.context, id: s.id, appId: null, appSlug: null, completed: s.state !== 'pending', conclusion: s.state, detailsUrl: s.target_url ?? null, output });
    }
    if (data.statuses.length === 0 || all.length >= data.total_count) return all;
  }
}

/**
 * The names of the checks `branch` requires: classic branch protection's (when it is on and
 * enforced) and its rulesets' required status checks, together, each once. Null when neither
 * requires any (goal-loop's own check left out). A read refused (403: the installation lacks the permission) or not found (404)
 * says nothing; other failures reject.
 */
export async function readRequiredChecks(o: Octokit, owner: string, repo: string, branch: string): Promise<string[] | null> {
  const [fromProtection, fromRulesets] = await Promise.all([
    unless([403, 404], async () => {
      const { data } = await o.rest.repos.getBranch({ owner, repo, branch });
      const p = data.protection;
      const rsc = p?.required_status_checks;
      if (!data.protected || p?.enabled === false || !rsc || rsc.enforcement_level === 'off') return [];
      return [...(rsc.contexts ?? []), ...(rsc.checks ?? []).map((c) => c.context)];
    }, []),
    unless([403, 404], async () => {
      const rules = await o.paginate(o.rest.repos.getBranchRules, { owner, repo, branch, per_page: PER_PAGE });
      return rules.flatMap((r) => (r.type === 'required_status_checks' ? (r.parameters?.required_status_checks ?? []).map((c) => c.context) : []));
    }, []),
  ]);
  // Our own check is never the repository's CI, even when branch protection requires it.
  const names = [...new Set([...fromProtection, ...fromRulesets])].filter((name) => name !== CHECK_NAME);
  return names.length > 0 ? names : null;
}

/**
 * What a failing check said beyond its output: a check run's annotations (the first 50), and for
 * an Actions job (its check run id is the job's id) the tail of its log. A log that is gone (404,
 * 410: logs expire), not ours to read (403) or not read for any other reason leaves no tail;
 * annotations likewise read as none.
 */
export async function readCheckFailure(o: Octokit, owner: string, repo: string, check: RepoCheck): Promise<CheckFailureDetail> {
  if (check.source !== 'check_run') return { annotations: [] };
  // What a failure said beyond its output is a help, never a condition: any error reads as nothing (the fix task goes on without it).
  const [annotations, logTail] = await Promise.all([
    bestEffort(() => readAnnotations(o, owner, repo, check.id), []),
    check.appSlug === 'github-actions'
      ? bestEffort(async () => {
          const { data } = await o.rest.actions.downloadJobLogsForWorkflowRun({ owner, repo, job_id: check.id });
          return jobLogTail(logText(data));
        }, undefined)
      : Promise.resolve(undefined),
  ]);
  return logTail === undefined || logTail === '' ? { annotations } : { annotations, logTail };
}

async function readAnnotations(o: Octokit, owner: string, repo: string, checkRunId: number): Promise<RepoCheckAnnotation[]> {
  const out: RepoCheckAnnotation[] = [];
  for await (const { data } of o.paginate.iterator(o.rest.checks.listAnnotations, { owner, repo, check_run_id: checkRunId, per_page: MAX_ANNOTATIONS })) {
    for (const a of data) {
      if (out.length >= MAX_ANNOTATIONS) break;
      out.push({ path: a.path, startLine: a.start_line, endLine: a.end_line, level: a.annotation_level ?? 'notice', title: a.title ?? null, message: a.message ?? '' });
    }
    if (out.length >= MAX_ANNOTATIONS) break;
  }
  return out;
}

/**
 * The log's text. Octokit follows GitHub's redirect to the signed URL; it decodes a `text/*` (or
 * utf-8) answer to a string and gives any other as an ArrayBuffer.
 */
function logText(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(data);
  if (ArrayBuffer.isView(data)) return new TextDecoder().decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return '';
}

// Control sequences (colours, cursor moves), OSC sequences (links, titles), and a lone ESC left over.
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences are control characters
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-_]?/g;
/** The timestamp GitHub Actions puts before each line of a job's log. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ?/;

/**
 * The last 60 non-empty lines of a job's log, without their timestamps and colours, at most
 * 6,000 characters: whole lines from the end (only a last line longer than that is cut, to its end).
 */
export function jobLogTail(log: string): string {
  const lines = log
    .replace(/^\uFEFF/, '')
    .split(/\r?\n|\r/)
    .map((l) => l.replace(TIMESTAMP, '').replace(ANSI, '').trimEnd())
    .filter((l) => l.trim() !== '')
    .slice(-LOG_TAIL_LINES);
  const kept: string[] = [];
  let size = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] ?? '';
    const added = line.length + (kept.length > 0 ? 1 : 0);
    if (size + added > LOG_TAIL_CHARS) {
      if (kept.length === 0) kept.unshift(line.slice(-LOG_TAIL_CHARS));
      break;
    }
    kept.unshift(line);
    size += added;
  }
  return kept.join('\n');
}
