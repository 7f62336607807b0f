import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { inertLine } from '../common/inert-text.js';
import type { Escalation } from '../goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { EffectOnce, Forge } from '../ports/forge.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Outbox } from '../ports/outbox.js';
import { type GitHubGoal, type GitHubGoalMeta, readGitHubMeta } from '../steering/goal-meta.js';
import { labelForGoal, STATE_LABELS, type StateLabel } from '../steering/labels.js';
import { takePendingReviews } from '../steering/pending-reviews.js';
import { newAnnotations } from '../steering/report/annotations.js';
import { checkAnnotations, renderCheckRun } from '../steering/report/check-run.js';
import { renderEscalation } from '../steering/report/escalation.js';
import { renderChanges } from '../steering/report/pull-request.js';
import { type AttemptView, groupAttempts } from '../steering/report/record.js';
import { checklist, type Links, renderStatus, STATUS_MARKER } from '../steering/report/status-comment.js';

export type Octokit = InstanceType<typeof ProbotOctokit>;

export interface GitHubForgeOptions {
  octokit: Octokit;
  goal: GitHubGoal;
  key: GoalKey;
  /** The goal's record (its meta keeps the ids of what was posted) and its given-up effects. */
  ledger: GoalLedger & Pick<Outbox, 'givenUpEffects'>;
  logger: Logger;
  /** The goal's attempt record, shown in the check run, the escalation comment and the PR body. */
  attemptLog?: Pick<AttemptLog, 'listAttemptEntries'>;
  /** The goal workspace's path as its commands saw it: absolute paths in their output under it name repository files. */
  workspaceDir?: string;
  /** Least time between two edits of the status comment (secondary rate limits). */
  minUpdateIntervalMs?: number;
}

/**
 * Reports a goal on GitHub: one status comment edited in place, state labels, a draft PR
 * opened at the first checkpoint, a `goal-loop` check run, escalation comments. Every write
 * is idempotent: ids are kept in the ledger's meta and found again by marker or head branch.
 */
export class GitHubForge implements Forge {
  private readonly o: Octokit;
  private readonly g: GitHubGoal;
  private lastBody = '';
  private lastWriteAt = 0;
  private pending?: GoalSnapshot;
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private label?: StateLabel;
  private identity?: Promise<AppIdentity>;

  constructor(private readonly opts: GitHubForgeOptions) {
    this.o = opts.octokit;
    this.g = opts.goal;
  }

  async update(s: GoalSnapshot): Promise<void> {
    this.pending = s;
    const wait = (this.opts.minUpdateIntervalMs ?? 3000) - (Date.now() - this.lastWriteAt);
    if (wait <= 0) return this.flush();
    // Throttled: the latest snapshot is written when the interval has passed.
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch((err: unknown) => this.opts.logger.warn({ err }, 'status update failed'));
    }, wait);
  }

  async checkpointed(s: GoalSnapshot, cp: { taskId: string; sha: string }, once?: EffectOnce): Promise<void> {
    const pr = await this.ensurePullRequest(s);
    const record = await this.record();
    await this.o.rest.pulls.update({ owner: this.g.owner, repo: this.g.repo, pull_number: pr.number, body: this.prBody(s, pr, record) });
    await this.reportCheckRun(s, cp.sha, 'in_progress', undefined, once?.retry ?? false, record);
    await this.flush(s);
    await this.answerReviews([{ task_id: cp.taskId, sha: cp.sha }]);
  }

  async requestApproval(s: GoalSnapshot, taskIds: string[], once?: EffectOnce): Promise<void> {
    await this.flush(s);
    const list = taskIds.map((t) => `\`/goal approve ${t}\``).join(', ');
    await this.comment(
      this.g.issueNumber,
      `This goal is waiting for an approval before it runs ${taskIds.map((t) => `\`${t}\``).join(', ')} (its risk is above \`max_risk: ${s.limits.max_risk}\`, or it requires approval). A maintainer can continue with ${list}.`,
      once && { marker: effectMarker(once.id), retry: once.retry },
    );
  }

  async escalate(s: GoalSnapshot, e: Escalation, once?: EffectOnce): Promise<void> {
    await this.flush(s);
    const mention = (this.g.assignees.length > 0 ? this.g.assignees : [this.g.author]).map((u) => `@${u}`).join(' ');
    const body = renderEscalation(s, e, await this.record(), { mention, repoUrl: this.g.htmlUrl, goalId: this.opts.key.goalId });
    await this.comment(this.g.issueNumber, body, once && { marker: effectMarker(once.id), retry: once.retry });
  }

  async finished(r: LoopResult, s: GoalSnapshot, once?: EffectOnce): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush(s);
    const pr = await this.findPullRequest();
    if (pr && r.checkpoints.length > 0) {
      const head = r.checkpoints.at(-1)!.sha;
      const record = await this.record();
      await this.reportCheckRun(s, head, 'completed', r, once?.retry ?? false, record);
      await this.o.rest.pulls.update({ owner: this.g.owner, repo: this.g.repo, pull_number: pr.number, body: this.prBody(s, pr, record) });
      if (r.status === 'LOOP_COMPLETE' && pr.draft) {
        await this.o.graphql('mutation($id: ID!) { markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } } }', { id: pr.node_id });
      }
    }
    // A review whose task a run found already checkpointed (pushed by a killed run) had no checkpoint report.
    await this.answerReviews(r.checkpoints);
  }

  /** Writes the status comment and the state label now. */
  async flush(s: GoalSnapshot | undefined = this.pending): Promise<void> {
    if (!s) return;
    this.pending = s;
    // Serialize writes so two flushes never race to create two comments.
    const run = this.writing.then(() => this.write(this.pending!));
    this.writing = run.catch(() => undefined);
    return run;
  }

  /** This App as GitHub knows it, asked once: only its own comments can carry its markers. */
  private self(): Promise<AppIdentity> {
    this.identity ??= appIdentity(this.o).catch((err: unknown) => {
      this.identity = undefined; // asked again next time
      throw err;
    });
    return this.identity;
  }

  /** The goal's meta as it is now, read through the App's schema. */
  private async meta(): Promise<GitHubGoalMeta> {
    return readGitHubMeta((await this.opts.ledger.getGoal(this.opts.key))?.meta ?? {});
  }

  private async write(s: GoalSnapshot): Promise<void> {
    const meta = await this.meta();
    const pr = pullRequestIn(meta);
    const merged = meta.merged === true;
    const links: Links = { repoUrl: this.g.htmlUrl, ...(pr ? { pullRequest: { ...pr, ...(merged ? { merged } : {}) } } : {}) };
    const body = renderStatus(s, links, await this.opts.ledger.givenUpEffects({ key: this.opts.key }));
    if (body !== this.lastBody) {
      await this.upsertStatusComment(body);
      this.lastBody = body;
      this.lastWriteAt = Date.now();
    }
    await this.setStateLabel(labelForGoal(s.state, merged));
  }

  private async upsertStatusComment(body: string): Promise<void> {
    const meta = await this.meta();
    let id = meta.statusCommentId;
    id ??= await findCommentByMarker(this.o, this.g, STATUS_MARKER, await this.self());
    if (id) {
      try {
        await this.o.rest.issues.updateComment({ owner: this.g.owner, repo: this.g.repo, comment_id: id, body });
        if (meta.statusCommentId !== id) await this.opts.ledger.setMeta(this.opts.key, { statusCommentId: id });
        return;
      } catch (err) {
        if ((err as { status?: number }).status !== 404) throw err; // deleted by someone: post a new one
      }
    }
    const created = await this.o.rest.issues.createComment({ owner: this.g.owner, repo: this.g.repo, issue_number: this.g.issueNumber, body });
    await this.opts.ledger.setMeta(this.opts.key, { statusCommentId: created.data.id });
  }

  private async setStateLabel(label: StateLabel): Promise<void> {
    if (this.label === label) return;
    const { owner, repo, issueNumber } = this.g;
    const current = (await this.o.rest.issues.get({ owner, repo, issue_number: issueNumber })).data.labels.map((l) => (typeof l === 'string' ? l : (l.name ?? '')));
    // The new label first: a process killed midway leaves two labels (fixed by the retry), never none.
    if (!current.includes(label)) await this.o.rest.issues.addLabels({ owner, repo, issue_number: issueNumber, labels: [label] });
    for (const stale of current.filter((l) => (STATE_LABELS as readonly string[]).includes(l) && l !== label)) {
      await this.o.rest.issues.removeLabel({ owner, repo, issue_number: issueNumber, name: stale }).catch((err: { status?: number }) => {
        if (err.status !== 404) throw err;
      });
    }
    this.label = label;
  }

  /**
   * Posts a comment; with `once`, the body carries its marker, and a retry first looks for a
   * comment with that marker (an earlier try that posted it, then died), so it is posted once.
   */
  async comment(issueNumber: number, body: string, once?: { marker: string; retry: boolean }): Promise<void> {
    const { owner, repo } = this.g;
    if (once?.retry && (await findCommentByMarker(this.o, { owner, repo, issueNumber }, once.marker, await this.self())) !== undefined) return;
    await this.o.rest.issues.createComment({ owner, repo, issue_number: issueNumber, body: once ? `${body}\n\n${once.marker}` : body });
  }

  /**
   * Replies to each review whose fix task one of these checkpoints verified, once: two effects may
   * answer one review (its checkpoint's, and a run's end), so the reply's marker is always looked for.
   */
  private async answerReviews(checkpoints: ReadonlyArray<{ task_id: string; sha: string }>): Promise<void> {
    const pending = (await this.meta()).pendingReviews ?? [];
    const done = new Map(checkpoints.map((c) => [c.task_id, c.sha]));
    const answered = pending.filter((p) => done.has(p.taskId));
    if (answered.length === 0) return;
    for (const p of answered) {
      await this.comment(p.prNumber, `Addressed review ${this.g.htmlUrl}/pull/${p.prNumber}#pullrequestreview-${p.reviewId} in ${done.get(p.taskId)!.slice(0, 7)} (task \`${p.taskId}\`, verified).`, {
        marker: `<!-- goal-loop:review-reply ${p.reviewId} -->`,
        retry: true,
      });
    }
    // Atomic: a review that arrived meanwhile stays pending.
    await takePendingReviews(
      this.opts.ledger,
      this.opts.key,
      answered.map((a) => a.reviewId),
    );
  }

  /** The goal's attempt record, by attempt; empty when it cannot be read (the report goes on without it). */
  private async record(): Promise<AttemptView[]> {
    if (!this.opts.attemptLog) return [];
    try {
      return groupAttempts(await this.opts.attemptLog.listAttemptEntries(this.opts.key));
    } catch (err) {
      this.opts.logger.warn({ err }, 'cannot read the attempt record');
      return [];
    }
  }

  private prBody(s: GoalSnapshot, pr: { number: number; url: string }, record: readonly AttemptView[]): string {
    const links: Links = { repoUrl: this.g.htmlUrl, pullRequest: pr };
    const changes = renderChanges(s, record, { repoUrl: this.g.htmlUrl, goalId: this.opts.key.goalId });
    return `Closes #${this.g.issueNumber}\n\nThis pull request is built by goal-loop, one verified checkpoint commit per task.\n\n${checklist(s, links)}\n${changes ? `\n${changes}\n` : ''}`;
  }

  /** The PR whose head is the goal branch (any state), from the ledger or by asking GitHub. */
  private async findPullRequest(): Promise<{ number: number; url: string; node_id: string; draft: boolean } | undefined> {
    const { data } = await this.o.rest.pulls.list({ owner: this.g.owner, repo: this.g.repo, head: `${this.g.owner}:${this.g.branch}`, state: 'all', per_page: 10 });
    // Only a pull request whose head is in this repository: a fork's branch may carry the same name.
    const pr = data.find((p) => p.head.ref === this.g.branch && p.head.repo !== null && p.head.repo.id === p.base.repo.id);
    if (!pr) return undefined;
    await this.opts.ledger.setMeta(this.opts.key, { prNumber: pr.number, prUrl: pr.html_url });
    return { number: pr.number, url: pr.html_url, node_id: pr.node_id, draft: pr.draft ?? false };
  }

  /** This app's `goal-loop` check run on a commit, if there is one (another App may name one so too). */
  private async findCheckRun(headSha: string): Promise<number | undefined> {
    const self = await this.self();
    const { data } = await this.o.rest.checks.listForRef({ owner: this.g.owner, repo: this.g.repo, ref: headSha, check_name: 'goal-loop', app_id: self.id, per_page: 100 });
    return data.check_runs.find((c) => c.app?.id === self.id)?.id;
  }

  private async ensurePullRequest(s: GoalSnapshot): Promise<{ number: number; url: string }> {
    const found = await this.findPullRequest();
    if (found) return found;
    const { data } = await this.o.rest.pulls.create({
      owner: this.g.owner,
      repo: this.g.repo,
      head: this.g.branch,
      base: this.g.defaultBranch,
      title: `goal #${this.g.issueNumber}: ${inertLine(s.objective, 200)}`,
      body: `Closes #${this.g.issueNumber}\n\n_goal-loop is working…_`,
      draft: true,
    });
    await this.opts.ledger.setMeta(this.opts.key, { prNumber: data.number, prUrl: data.html_url });
    return { number: data.number, url: data.html_url };
  }

  private async reportCheckRun(s: GoalSnapshot, headSha: string, status: 'in_progress' | 'completed', r: LoopResult | undefined, retry: boolean, record: readonly AttemptView[]): Promise<void> {
    const { owner, repo } = this.g;
    const rendered = renderCheckRun(s, record, { repoUrl: this.g.htmlUrl, goalId: this.opts.key.goalId });
    const found = checkAnnotations(s, record, this.opts.workspaceDir);
    const conclusion = r ? (r.success ? 'success' : r.status === 'ESCALATED' ? 'failure' : 'neutral') : undefined;
    const meta = await this.meta();
    let id = meta.checkRunId !== undefined && meta.checkRunSha === headSha ? meta.checkRunId : undefined;
    // An earlier try may have created it and died before recording its id.
    if (id === undefined && retry) id = await this.findCheckRun(headSha);
    if (id !== undefined) {
      // Annotations add up on a check run: only those it lacks are sent, so a repeated report adds none.
      const existing = found.length > 0 ? await this.o.paginate(this.o.rest.checks.listAnnotations, { owner, repo, check_run_id: id, per_page: 100 }) : [];
      const annotations = newAnnotations(found, existing);
      await this.o.rest.checks.update({
        owner,
        repo,
        check_run_id: id,
        status,
        output: { ...rendered, ...(annotations.length > 0 ? { annotations } : {}) },
        ...(conclusion ? { conclusion } : {}),
      });
      if (meta.checkRunId !== id) await this.opts.ledger.setMeta(this.opts.key, { checkRunId: id, checkRunSha: headSha });
      return;
    }
    const annotations = newAnnotations(found, []);
    const { data } = await this.o.rest.checks.create({
      owner,
      repo,
      name: 'goal-loop',
      head_sha: headSha,
      status,
      output: { ...rendered, ...(annotations.length > 0 ? { annotations } : {}) },
      ...(conclusion ? { conclusion } : {}),
    });
    await this.opts.ledger.setMeta(this.opts.key, { checkRunId: data.id, checkRunSha: headSha });
  }
}

/** The marker that makes an outbox effect's comment findable, so a retry never posts it twice (`id`: loop/outbox.ts effectOnceId). */
export const effectMarker = (id: string) => `<!-- goal-loop:effect ${id} -->`;

/** This GitHub App: its id and slug (its bot user is `<slug>[bot]`). */
export interface AppIdentity {
  id: number;
  slug: string;
}

/** Asks GitHub which App this is (`GET /app`: Octokit's app auth sends the App's JWT for it). */
export async function appIdentity(o: Octokit): Promise<AppIdentity> {
  const { data } = await o.rest.apps.getAuthenticated();
  if (!data?.id || !data.slug) throw new Error('GitHub did not say which App this is (GET /app)');
  return { id: data.id, slug: data.slug };
}

/**
 * A comment this App wrote: GitHub names the App in `performed_via_github_app`, and its author is
 * the App's bot user. Any other account, another App's bot (github-actions, dependabot) included,
 * may write any text, markers too.
 */
export function isOwnComment(c: { user?: { login?: string; type?: string } | null; performed_via_github_app?: { id?: number } | null }, self: AppIdentity): boolean {
  if (c.performed_via_github_app?.id === self.id) return true;
  return c.user?.type === 'Bot' && c.user.login === `${self.slug}[bot]`;
}

function pullRequestIn(meta: GitHubGoalMeta): { number: number; url: string } | undefined {
  return meta.prNumber !== undefined && meta.prUrl !== undefined ? { number: meta.prNumber, url: meta.prUrl } : undefined;
}

/**
 * This App's comment carrying a marker, if there is one (searching every page). The marker must be
 * the body's first line (the status comment's) or its last (what `comment` appends): a marker
 * quoted anywhere else in a comment, e.g. inside a verification tail, is never taken for it.
 */
export async function findCommentByMarker(o: Octokit, g: Pick<GitHubGoal, 'owner' | 'repo' | 'issueNumber'>, marker: string, self: AppIdentity): Promise<number | undefined> {
  const comments = await o.paginate(o.rest.issues.listComments, { owner: g.owner, repo: g.repo, issue_number: g.issueNumber, per_page: 100 });
  const carries = (body: string | undefined | null) => {
    const lines = (body ?? '').replace(/\r\n?/g, '\n').trim().split('\n');
    return lines[0] === marker || lines.at(-1) === marker;
  };
  return comments.find((c) => isOwnComment(c, self) && carries(c.body))?.id;
}
