import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { type BaseFollowedReport, describeBaseFollowed } from '../goal/base-followed.js';
import type { Escalation } from '../goal/escalation.js';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { EffectOnce, Forge } from '../ports/forge.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { Outbox } from '../ports/outbox.js';
import type { WritePriority } from '../ports/write-budget.js';
import { type GitHubGoal, type GitHubGoalMeta, readGitHubMeta } from '../steering/goal-meta.js';
import { labelForGoal, labelForState, type StateLabel } from '../steering/labels.js';
import type { ChecksVerdict } from '../steering/repo-checks.js';
import { renderEscalation } from '../steering/report/escalation.js';
import type { TaskProof } from '../steering/report/evidence.js';
import { type AttemptView, groupAttempts, taskProofs } from '../steering/report/record.js';
import { type Links, renderStatus } from '../steering/report/status-comment.js';
import { createOnce } from './create-once.js';
import type { QueueShown } from './decide-queue-report.js';
import { type CheckRunContext, reportCheckRun } from './goal-check-run.js';
import { GoalPullRequest } from './goal-pull-request.js';
import { markPullRequestReady } from './octokit-issue-forge.js';
import { appIdentity, effectMarker, findCommentByMarker, type WriterIdentity } from './own-comments.js';
import { type ReadinessDeps, settleDraft } from './pr-readiness.js';
import { answerReviews } from './review-replies.js';
import { replaceStateLabel } from './state-label.js';
import { type UpsertHow, upsertStatusComment } from './status-comment-upsert.js';
import { createOptions } from './write-options.js';

export { type AppIdentity, appIdentity, effectMarker, findCommentByMarker, isOwnComment, type WriterIdentity } from './own-comments.js';

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
  /** Who writes as goal-loop here; default: the App, asked of GitHub (`GET /app`). */
  identity?: () => Promise<WriterIdentity>;
  /** Whether this token may make check runs (a user's may not); default true. */
  checkRuns?: boolean;
  /**
   * A finished goal's draft waits for the repository's own checks on its head (pr-readiness.ts);
   * default true. False: it is made ready at once (a GitHub Action: no check event reaches it).
   */
  awaitRepoChecks?: boolean;
  /**
   * What the status comment carries besides the report (a GitHub Action keeps the goal's state
   * there): `footer` is appended to each body written; a change of `key` is worth an edit, as a
   * change on the checklist is.
   */
  carry?: { footer: (body: string) => Promise<string>; key: (s: GoalSnapshot) => string };
  /** Sees every snapshot the run reports (an Action prints each task's progress in the job's log). */
  progress?: (s: GoalSnapshot) => void;
}

/**
 * Reports a goal on GitHub: one status comment edited in place, state labels, a draft PR
 * opened at the first checkpoint, a `goal-loop` check run where a run rests, escalation comments.
 * Every write is idempotent: ids are kept in the ledger's meta and found again by marker or head
 * branch; a create is never re-sent before it is looked for (create-once.ts). Writes are few: the
 * status comment's edits coalesce (the latest wins) and are sent only when its text changes, a
 * label change is one request, the PR body is sent only when it changes.
 */
export class GitHubForge implements Forge {
  private readonly o: Octokit;
  private readonly g: GitHubGoal;
  /** The status comment's text as GitHub has it ('' until known). */
  private lastBody = '';
  private lastWriteAt = 0;
  private pending?: GoalSnapshot;
  private timer?: NodeJS.Timeout;
  private timerDueAt = 0;
  private writing: Promise<void> = Promise.resolve();
  /** When this forge last wrote the PR's body (opened it, or edited it); 0: never. */
  private readonly pr: GoalPullRequest;
  /** What the status comment's checklist shows (checklistKey), once written. */
  private shownChecklist?: string;
  /** The checklist's evidence, and the tasks' statuses it was read for. */
  private proofCache?: { key: string; proofs: ReadonlyMap<string, TaskProof> };
  /** A status write started by update() is in flight; `updatedMeanwhile`: update() was called since. */
  private updating = false;
  private updatedMeanwhile = false;
  private label?: StateLabel;
  private identity?: Promise<WriterIdentity>;

  constructor(private readonly opts: GitHubForgeOptions) {
    this.o = opts.octokit;
    this.g = opts.goal;
    this.pr = new GoalPullRequest(opts.octokit, opts.goal, opts.key, opts.ledger);
  }

  /**
   * Progress: a new state label shows at once; a change on the checklist (a task's status or
   * attempt) at most once an interval, the latest snapshot winning; counters alone wait for the
   * next of those (status-comment edits are the least urgent writes).
   */
  async update(s: GoalSnapshot): Promise<void> {
    this.pending = s;
    this.opts.progress?.(s);
    // The run goes on while a status write waits (for the write budget, say): the write in flight
    // looks again when it is done, so updates meanwhile coalesce into one edit.
    if (this.updating) {
      this.updatedMeanwhile = true;
      return;
    }
    const newLabel = labelForState(s.state) !== this.label;
    // Counters alone (iterations, tokens, a step within a task) are carried by the next edit that matters.
    if (!newLabel && this.shownKey(s) === this.shownChecklist) return;
    const interval = this.opts.minUpdateIntervalMs ?? 3000;
    // A new label within a moment, so states passed through in that moment (INITIALIZING on the
    // way to EXECUTING) cost no writes; anything else once an interval. (No interval: at once.)
    const settleMs = interval <= 0 ? 0 : this.label === undefined ? FIRST_LABEL_SETTLE_MS : LABEL_SETTLE_MS;
    const waitMs = newLabel ? settleMs : interval - (Date.now() - this.lastWriteAt);
    if (waitMs <= 0) {
      this.cancelTimer();
      this.startUpdate();
      return;
    }
    if (this.timer && this.timerDueAt <= Date.now() + waitMs) return; // one is due soon enough
    this.cancelTimer();
    this.timerDueAt = Date.now() + waitMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.startUpdate();
    }, waitMs);
  }

  /** Sends a status write that waits for its time now, and resolves when every one has ended (however). */
  async settled(): Promise<void> {
    if (this.timer) {
      this.cancelTimer();
      this.startUpdate();
    }
    await this.writing;
  }

  /** One status write in the background; when it ends, the latest snapshot is looked at again. */
  private startUpdate(): void {
    this.updating = true;
    void this.flush()
      .catch((err: unknown) => this.opts.logger.warn({ err }, 'status update failed'))
      .finally(() => {
        this.updating = false;
        if (this.updatedMeanwhile && this.pending) {
          this.updatedMeanwhile = false;
          void this.update(this.pending);
        }
      });
  }

  /** The PR (opened at the first checkpoint) shows it; the status comment, with the run's progress. */
  async checkpointed(s: GoalSnapshot, cp: { taskId: string; sha: string }, _once?: EffectOnce): Promise<void> {
    const record = await this.record();
    const pr = await this.pr.ensure(s, record);
    // A draft's body follows the run at most every few minutes (the status comment shows each
    // checkpoint at once); where the run rests it is written in full (finished).
    if (Date.now() - this.pr.bodyWrittenAt >= PR_BODY_INTERVAL_MS) await this.pr.updateBody(pr, this.pr.body(s, record));
    // What the comment carries (an Action's goal record) is written at each checkpoint, at once.
    if (this.opts.carry) await this.flush(s);
    else await this.update(s);
    await this.answerReviews([{ task_id: cp.taskId, sha: cp.sha }]);
  }

  /** On the PR's timeline (the status comment shows it too): the branch was rewritten under the reviewers. */
  async baseFollowed(s: GoalSnapshot, report: BaseFollowedReport, once?: EffectOnce): Promise<void> {
    await this.flush(s);
    const pr = await this.pr.find();
    if (!pr) return;
    const repairs = report.repairs.length > 0 ? ' The tasks to repair run now, each told what changed.' : '';
    await this.comment(pr.number, `goal-loop followed the base branch: ${describeBaseFollowed(report)}.${repairs}`, once && { marker: effectMarker(once.id), retry: once.retry });
  }

  async requestApproval(s: GoalSnapshot, taskIds: string[], once?: EffectOnce): Promise<void> {
    await this.flush(s);
    const list = taskIds.map((t) => `\`/goal approve ${t}\``).join(', ');
    await this.comment(
      this.g.issueNumber,
      `This goal is waiting for an approval before it runs ${taskIds.map((t) => `\`${t}\``).join(', ')} (its risk is above \`max_risk: ${s.limits.max_risk}\`, or it requires approval). A maintainer can continue with ${list}.`,
      once && { marker: effectMarker(once.id), retry: once.retry },
      'urgent',
    );
  }

  async escalate(s: GoalSnapshot, e: Escalation, once?: EffectOnce): Promise<void> {
    await this.flush(s);
    const mention = (this.g.assignees.length > 0 ? this.g.assignees : [this.g.author]).map((u) => `@${u}`).join(' ');
    const body = renderEscalation(s, e, await this.record(), { mention, repoUrl: this.g.htmlUrl, goalId: this.opts.key.goalId });
    await this.comment(this.g.issueNumber, body, once && { marker: effectMarker(once.id), retry: once.retry }, 'urgent');
  }

  async finished(r: LoopResult, s: GoalSnapshot, _once?: EffectOnce): Promise<void> {
    this.cancelTimer();
    try {
      const pr = await this.pr.find();
      if (pr && r.checkpoints.length > 0) {
        const head = r.checkpoints.at(-1)!.sha;
        const record = await this.record();
        if (this.opts.checkRuns !== false) await reportCheckRun(this.checkRunContext(), s, head, r, record);
        await this.pr.updateBody(pr, this.pr.body(s, record));
        if (r.status === 'LOOP_COMPLETE' && pr.draft) {
          if (this.opts.awaitRepoChecks === false) await markPullRequestReady(this.o, pr.node_id);
          // The branch's tip as GitHub has it now (its view of the PR may lag the push; a merge commit may top the checkpoints).
          else await settleDraft(this.readinessDeps(), { nodeId: pr.node_id, head: (await this.branchTip()) ?? head }, { graceOver: false });
        } else if (!pr.draft && (await this.meta()).checksAwaited !== undefined) {
          await this.opts.ledger.setMeta(this.opts.key, { checksAwaited: null });
        }
      }
    } finally {
      // After the readiness (the status comment says whether the PR waits for the repository's checks), and however it went.
      await this.flush(s);
    }
    // A review whose task a run found already checkpointed (pushed by a killed run) had no checkpoint report.
    await this.answerReviews(r.checkpoints);
  }

  /** The goal branch's tip on GitHub; undefined when GitHub does not know the branch. */
  private async branchTip(): Promise<string | undefined> {
    try {
      return (await this.o.rest.repos.getBranch({ owner: this.g.owner, repo: this.g.repo, branch: this.g.branch })).data.commit.sha;
    } catch (err) {
      if ((err as { status?: number }).status === 404) return undefined;
      throw err;
    }
  }

  /** After the grace period: a finished goal's draft still awaiting its checks is made ready unless they fail or run; the verdict on the head judged. */
  async settleAwaitedChecks(): Promise<{ verdict: ChecksVerdict; head: string } | undefined> {
    const pr = await this.pr.find();
    if (!pr?.draft) {
      await this.opts.ledger.setMeta(this.opts.key, { checksAwaited: null });
      return undefined;
    }
    return { verdict: await settleDraft(this.readinessDeps(), { nodeId: pr.node_id, head: pr.head }, { graceOver: true }), head: pr.head };
  }

  /** This App's id (its check runs are not the repository's CI); undefined when goal-loop writes as a user. */
  async ownAppId(): Promise<number | undefined> {
    const self = await this.self();
    return 'id' in self && self.id > 0 ? self.id : undefined;
  }

  private readinessDeps(): ReadinessDeps {
    return {
      o: this.o,
      g: this.g,
      key: this.opts.key,
      ledger: this.opts.ledger,
      ownAppId: () => this.ownAppId(),
    };
  }

  /** Writes the status comment and the state label now. */
  async flush(s: GoalSnapshot | undefined = this.pending): Promise<void> {
    if (!s) return;
    this.pending = s;
    this.opts.progress?.(s);
    // Serialize writes so two flushes never race to create two comments.
    const run = this.writing.then(() => this.write(this.pending!));
    this.writing = run.catch(() => undefined);
    return run;
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** What the status comment shows for update() to compare: the checklist, and what the comment carries. */
  private shownKey(s: GoalSnapshot): string {
    const carried = this.opts.carry?.key(s);
    return carried === undefined ? checklistKey(s) : `${checklistKey(s)}\n${carried}`;
  }

  /** This App as GitHub knows it, asked once: only its own comments can carry its markers. */
  private self(): Promise<WriterIdentity> {
    this.identity ??= (this.opts.identity ? this.opts.identity() : appIdentity(this.o)).catch((err: unknown) => {
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
    const merged = meta.merged === true;
    const body = await this.withCarried(renderStatus(s, this.links(meta), await this.opts.ledger.givenUpEffects({ key: this.opts.key }), undefined, await this.proofs(s)));
    if (body !== this.lastBody) {
      await this.upsertStatusComment(body, meta);
      this.lastBody = body;
      this.lastWriteAt = Date.now();
    }
    this.shownChecklist = this.shownKey(s);
    await this.setStateLabel(labelForGoal(s.state, merged));
  }

  /**
   * Writes the status comment now, its label left as it is (a GitHub Action takes its goal this
   * way, the comment naming the run, before the run's first state settles).
   */
  async writeStatusComment(s: GoalSnapshot): Promise<void> {
    const meta = await this.meta();
    const body = await this.withCarried(renderStatus(s, this.links(meta), await this.opts.ledger.givenUpEffects({ key: this.opts.key }), undefined, await this.proofs(s)));
    await this.upsertStatusComment(body, meta, { priority: 'normal' });
    this.lastBody = body;
  }

  /**
   * The status comment says the goal waits for a worker, at `place` (the queue report, holding the
   * goal's lease so no run writes meanwhile); its label is left as it is. `maxWaitMs`: the most
   * the write may wait for the budget (the report tries again later rather than hold the lease).
   */
  async showQueued(s: GoalSnapshot, place: QueueShown, priority: WritePriority, maxWaitMs: number): Promise<void> {
    const meta = await this.meta();
    const body = await this.withCarried(renderStatus(s, this.links(meta), await this.opts.ledger.givenUpEffects({ key: this.opts.key }), place, await this.proofs(s)));
    await this.upsertStatusComment(body, meta, { priority, maxWaitMs, keepQueueShown: true });
    await this.opts.ledger.setMeta(this.opts.key, { queueShown: place });
  }

  private async withCarried(body: string): Promise<string> {
    return this.opts.carry ? `${body}\n\n${await this.opts.carry.footer(body)}` : body;
  }

  private links(meta: GitHubGoalMeta): Links {
    const pr = pullRequestIn(meta);
    const awaited = meta.checksAwaited;
    return {
      repoUrl: this.g.htmlUrl,
      ...(pr ? { pullRequest: { ...pr, ...(meta.merged === true ? { merged: true } : {}) } } : {}),
      ...(awaited && meta.merged !== true ? { checksAwaited: { sha: awaited.sha, ...(awaited.verdict ? { verdict: awaited.verdict } : {}) } } : {}),
    };
  }

  /** Edits the status comment (or posts it); see status-comment-upsert.ts. */
  private async upsertStatusComment(body: string, meta: GitHubGoalMeta, how: UpsertHow = {}): Promise<void> {
    await upsertStatusComment({ o: this.o, g: this.g, key: this.opts.key, ledger: this.opts.ledger, self: () => this.self() }, body, meta, this.lastBody === '', how);
  }

  private async setStateLabel(label: StateLabel): Promise<void> {
    if (this.label === label) return;
    await replaceStateLabel(this.o, this.g, label);
    this.label = label;
  }

  /**
   * Posts a comment; with `once`, the body carries its marker, and a retry first looks for a
   * comment with that marker (an earlier try that posted it, then died), so it is posted once.
   * The create is never re-sent blindly: after a failure, the marker is looked for first; a
   * comment without one is not sent again here.
   */
  async comment(issueNumber: number, body: string, once?: { marker: string; retry: boolean }, priority: WritePriority = 'normal'): Promise<void> {
    const { owner, repo } = this.g;
    const find = once ? async () => findCommentByMarker(this.o, { owner, repo, issueNumber }, once.marker, await this.self()) : undefined;
    await createOnce({
      find,
      lookFirst: once?.retry ?? false,
      create: async () => (await this.o.rest.issues.createComment({ owner, repo, issue_number: issueNumber, body: once ? `${body}\n\n${once.marker}` : body, ...createOptions(priority) })).data.id,
    });
  }

  /** Replies to each review whose fix task one of these checkpoints verified, once (review-replies.ts). */
  private async answerReviews(checkpoints: ReadonlyArray<{ task_id: string; sha: string }>): Promise<void> {
    await answerReviews({ g: this.g, key: this.opts.key, ledger: this.opts.ledger, meta: () => this.meta(), comment: (n, body, once, priority) => this.comment(n, body, once, priority) }, checkpoints);
  }

  /**
   * Each task's evidence for the checklist, from the attempt record: read again only when a task's
   * status or checkpoint changed (a baseline or a checkpoint comes with one), not on every edit.
   */
  private async proofs(s: GoalSnapshot): Promise<ReadonlyMap<string, TaskProof>> {
    const key = s.tasks.map((t) => `${t.id}:${t.status}:${t.checkpointSha ?? ''}`).join(',');
    if (this.proofCache?.key !== key) this.proofCache = { key, proofs: taskProofs(await this.record(), s) };
    return this.proofCache.proofs;
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

  private checkRunContext(): CheckRunContext {
    return { o: this.o, g: this.g, key: this.opts.key, ledger: this.opts.ledger, self: () => this.self(), workspaceDir: this.opts.workspaceDir };
  }
}

/** How long a new state label waits for the states that follow it at once (the latest is shown). */
const LABEL_SETTLE_MS = 1000;
/**
 * The same for a run's first status write: a goal with a plan is cloned and running a few seconds
 * after it starts, and shows that at once rather than `goal:planning` first (two writes saved).
 */
const FIRST_LABEL_SETTLE_MS = 5000;

/** Least time between two edits of a draft PR's body at checkpoints. */
const PR_BODY_INTERVAL_MS = 5 * 60_000;

/** What a reader follows on the checklist: setup's status and command (not each second of it), each task's status and attempt. */
const checklistKey = (s: GoalSnapshot): string => [s.setup ? `setup:${s.setup.status}:${s.setup.command ?? ''}` : '', ...s.tasks.map((t) => `${t.id}:${t.status}:${t.attempts}`)].join('\n');

function pullRequestIn(meta: GitHubGoalMeta): { number: number; url: string } | undefined {
  return meta.prNumber !== undefined && meta.prUrl !== undefined ? { number: meta.prNumber, url: meta.prUrl } : undefined;
}
