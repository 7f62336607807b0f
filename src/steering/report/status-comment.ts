import { unlinked, unmentioned } from '../../common/inert-text.js';
import { plainText } from '../../common/plain-text.js';
import { redactUrls } from '../../common/redact-urls.js';
import { headChars, sanitizeProse, utf8Bytes } from '../../common/untrusted.js';
import { type BaseFollowedReport, describeBaseFollowed } from '../../goal/base-followed.js';
import { mermaidGraph } from '../../goal/render.js';
import type { GoalSnapshot, SetupProgress, TaskSnapshot } from '../../goal/result.js';
import { totalTokens } from '../../goal/usage.js';
import { evidenceWords, GREEN_BEFORE, GREEN_BEFORE_WHY, type TaskProof } from './evidence.js';
import { fitLines } from './fit.js';
import { code } from './inert.js';

/** Kept here too: the report and older callers import it from this module. */
export { unlinked } from '../../common/inert-text.js';

export const STATUS_MARKER = '<!-- goal-loop:status -->';
export const ESCALATION_MARKER = '<!-- goal-loop:escalation -->';
/**
 * Room the checklist may take, in UTF-8 bytes: with the changes list (40,000) a PR body stays
 * within GitHub's 65,536 bytes however many tasks, and titles of wide characters, there are.
 */
export const CHECKLIST_MAX_BYTES = 20_000;
/**
 * Room the mermaid graph may take, in UTF-8 bytes: with the checklist, the comment stays within
 * GitHub's 65,536 bytes, and the graph within what mermaid draws (50,000 characters).
 */
export const MERMAID_MAX_BYTES = 30_000;

export interface Links {
  /** e.g. https://github.com/octo/repo */
  repoUrl: string;
  pullRequest?: { number: number; url: string; merged?: boolean };
  /** The PR is a draft until the repository's checks on this head pass (their verdict when last read). */
  checksAwaited?: { sha: string; verdict?: string };
}

/** An outbox effect given up after its last try (ports/outbox.ts): what it was, and when. */
export interface Undelivered {
  kind: string;
  givenUpAt: string;
}

const REPORTS: Record<string, string> = {
  escalate: 'the escalation comment',
  request_approval: 'the approval request',
  checkpointed: 'a checkpoint report (pull request, check run)',
  finished: 'the final report (check run, pull request)',
  comment: 'a comment',
  sync: 'a status update',
};

/**
 * The reports given up: which, and when; never why (the error may name hosts or paths), which
 * `goal-loop status` shows to whoever runs the App.
 */
export function undeliveredNotice(undelivered: readonly Undelivered[]): string | undefined {
  if (undelivered.length === 0) return undefined;
  const why = "`goal-loop status` on the App's server says why";
  const item = (u: Undelivered) => `${REPORTS[u.kind] ?? 'a report'} (given up ${u.givenUpAt.replace(/\.\d+Z$/, 'Z')})`;
  if (undelivered.length === 1) return `> [!WARNING]\n> A report could not be delivered: ${item(undelivered[0]!)}, every try failed. ${why}.`;
  const shown = undelivered.slice(-5).map((u) => `> - ${item(u)}`);
  const more = undelivered.length > shown.length ? [`> - and ${undelivered.length - shown.length} earlier`] : [];
  return ['> [!WARNING]', `> Reports could not be delivered, every try failed (${why}):`, ...shown, ...more].join('\n');
}

/**
 * Text from issues, tasks, a model or a repository's output must not ping people, link or
 * reference anything, show a credential, or break our markdown.
 */
export function inlineUntrusted(text: string, max = 120): string {
  const one = redactUrls(sanitizeProse(plainText(text)))
    .replace(/\s+/g, ' ')
    .trim();
  const cut = one.length > max ? `${headChars(one, max)}…` : one;
  return unlinked(unmentioned(cut).replace(/([\\`*_[\]<>|&])/g, '\\$1'));
}

/**
 * `blockedBy`: the escalated tasks a pending task waits on (it is not run until they pass or are
 * skipped). `proof`: what the record says of its verification (record.ts taskProof): a done task
 * shows its evidence; a task whose verification passed before it ran gets ⚠ and a line saying so.
 */
export function checklistLine(t: TaskSnapshot, links: Links, blockedBy: readonly string[] = [], proof?: TaskProof): string {
  const box = t.status === 'done' || t.status === 'skipped' ? 'x' : ' ';
  const sha = t.checkpointSha ? ` ([${t.checkpointSha.slice(0, 7)}](${links.repoUrl}/commit/${t.checkpointSha}))` : '';
  const blocked = t.status === 'pending' && blockedBy.length > 0 ? ` — blocked by ${unlinked(blockedBy.join(', '))}` : '';
  const state =
    t.status === 'done'
      ? ''
      : blocked
        ? `${blocked}${t.attempts ? `, attempt ${t.attempts}` : ''}`
        : t.status === 'pending' && t.attempts === 0
          ? ''
          : ` — ${t.status.replace('_', ' ')}${t.attempts ? `, attempt ${t.attempts}` : ''}`;
  const done = t.status === 'done';
  const w = done ? evidenceWords(proof?.evidence) : undefined;
  const evidence = proof?.greenBefore ? ` · ⚠${w ? ` \`${w.short}\`` : ''}` : w ? ` · \`${w.short}\`` : '';
  const warning = proof?.greenBefore ? `\n  - ⚠ ${GREEN_BEFORE}, ${GREEN_BEFORE_WHY}${done ? ': review it by hand' : ''}` : '';
  // An id may read as a reference or a link (`GH-12`, `www.x.io`): unlinked like any prose.
  return `- [${box}] ${unlinked(t.id)} ${inlineUntrusted(t.title)}${sha}${state}${evidence}${warning}`;
}

/** `proofs`: each task's evidence (record.ts taskProofs); without it the checklist shows none. */
export function checklist(s: GoalSnapshot, links: Links, proofs?: ReadonlyMap<string, TaskProof>): string {
  const blockers = escalatedAncestors(s.tasks);
  const lines = s.tasks.map((t) => checklistLine(t, links, blockers.get(t.id), proofs?.get(t.id)));
  return fitLines(lines, CHECKLIST_MAX_BYTES, (n) => `- … ${n} more task(s): the \`goal-loop\` check run lists them all`).join('\n');
}

/** For each task, the escalated tasks it depends on, directly or through other tasks. */
export function escalatedAncestors(tasks: readonly TaskSnapshot[]): Map<string, string[]> {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const memo = new Map<string, Set<string>>();
  const visit = (id: string, path: Set<string>): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const out = new Set<string>();
    const t = byId.get(id);
    if (!t || path.has(id)) return out;
    path.add(id);
    for (const dep of t.dependencies) {
      const d = byId.get(dep);
      if (!d || d.status === 'done' || d.status === 'skipped') continue;
      if (d.status === 'escalated') out.add(dep);
      for (const a of visit(dep, path)) out.add(a);
    }
    path.delete(id);
    memo.set(id, out);
    return out;
  };
  return new Map(tasks.map((t) => [t.id, [...visit(t.id, new Set())]]));
}

export function budgetLine(s: GoalSnapshot): string {
  const tokens = totalTokens(s.tokens);
  return `**Budget:** ${s.iterations}/${s.limits.max_iterations} iterations · ${tokens.toLocaleString('en-US')} tokens · $${s.costUsd.toFixed(2)} of $${s.limits.cost_cap_usd.toFixed(2)}`;
}

/** A goal waiting for a worker: its place in the queue, and when that was true. */
export interface QueuePlace {
  position: number;
  /** ISO 8601. */
  at: string;
}

/** The state line's state: the goal's, or its place in the queue while it waits for a worker. */
function stateText(s: GoalSnapshot, queued: QueuePlace | undefined): string {
  if (!queued) return `\`${s.state}\``;
  const at = queued.at.replace(/:\d\d(\.\d+)?Z$/, ' UTC').replace('T', ' ');
  return `queued, position ${queued.position} among the goals waiting for a worker (as of ${at})`;
}

/**
 * The one status comment of a goal, edited in place; `undelivered`: the goal's given-up effects;
 * `queued`: its place in the queue, shown instead of its state while it waits for a worker;
 * `proofs`: each task's evidence from the attempt record (record.ts taskProofs), shown in the checklist.
 */
export function renderStatus(s: GoalSnapshot, links: Links, undelivered: readonly Undelivered[] = [], queued?: QueuePlace, proofs?: ReadonlyMap<string, TaskProof>, now: number = Date.now()): string {
  const branchUrl = `${links.repoUrl}/tree/${s.branch.split('/').map(encodeURIComponent).join('/')}`;
  const pr = links.pullRequest ? ` · **PR:** [#${links.pullRequest.number}](${links.pullRequest.url})${links.pullRequest.merged ? ', merged: done' : ''}` : '';
  const reason = s.stopReason && s.state !== 'LOOP_COMPLETE' ? `\n\n> ${inlineUntrusted(s.stopReason, 300)}` : '';
  const parts = [
    STATUS_MARKER,
    `### goal-loop: ${inlineUntrusted(s.objective, 200)}`,
    `**State:** ${stateText(s, queued)} · **Branch:** [\`${s.branch}\`](${branchUrl})${pr}${reason}${s.setup ? `\n\n${setupLine(s.setup, now)}` : ''}${s.followedBase ? `\n\n${baseLine(s.followedBase, links)}` : ''}${links.checksAwaited && s.state === 'LOOP_COMPLETE' ? `\n\n${checksLine(links.checksAwaited, links)}` : ''}`,

    s.tasks.length > 0 ? checklist(s, links, proofs) : '_Planning…_',
  ];
  if (s.tasks.length > 0) parts.push(taskGraph(s.tasks));
  parts.push(budgetLine(s));
  const notice = undeliveredNotice(undelivered);
  if (notice) parts.push(notice);
  return parts.join('\n\n');
}

/** A finished goal's draft waits for the repository's checks on its head. */
export function checksLine(c: NonNullable<Links['checksAwaited']>, links: Pick<Links, 'repoUrl'>): string {
  const sha = `[${c.sha.slice(0, 7)}](${links.repoUrl}/commit/${c.sha})`;
  const now = c.verdict === 'failing' ? 'some fail: a fix task follows' : c.verdict === 'pending' ? 'they are running' : 'none has reported yet';
  return `- [ ] **Repository checks:** the PR is a draft until they pass on ${sha} (${now}).`;
}

/** "- [x] Base branch: rebased onto [1a2b3c4](…): 3 checkpoints replayed, 3 re-verified" (a box left open while tasks are to repair). */
export function baseLine(r: BaseFollowedReport, links: Pick<Links, 'repoUrl'>): string {
  const sha = r.onto.slice(0, 7);
  const text = describeBaseFollowed(r).replace(sha, `[${sha}](${links.repoUrl}/commit/${r.onto})`);
  return `- [${r.repairs.length > 0 ? ' ' : 'x'}] **Base branch:** ${text}`;
}

/**
 * This run's setup: "Setup: running `npm ci` (12 s)", "Setup: done in 14 s (restored from the
 * setup cache)", or "Setup: failed after 60 s: …". The command and the failure are untrusted.
 */
export function setupLine(p: SetupProgress, now: number = Date.now()): string {
  const seconds = `${Math.round(Math.max(0, p.durationMs ?? now - p.startedAt) / 1000)} s`;
  const command = p.command ? ` ${code(p.command, 80)}` : '';
  if (p.status === 'running') return `**Setup:** running${command} (${seconds})`;
  if (p.status === 'done') return `**Setup:** done in ${seconds}${p.restored ? ' (restored from the setup cache)' : command ? `,${command}` : ''}`;
  return `**Setup:** failed after ${seconds}${p.failure ? `: ${inlineUntrusted(p.failure, 200)}` : command ? `,${command}` : ''}`;
}

/** The task graph, bounded: with titles, else with ids alone, else a line saying it is too large. */
function taskGraph(tasks: readonly TaskSnapshot[]): string {
  for (const titles of [true, false]) {
    const graph = mermaidGraph(tasks, { titles });
    if (utf8Bytes(graph) <= MERMAID_MAX_BYTES) return `\`\`\`mermaid\n${graph}\n\`\`\``;
  }
  return `_The task graph (${tasks.length} tasks) is too large to draw here; \`goal-loop plan\` draws it._`;
}
