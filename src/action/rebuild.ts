import type { Logger } from 'pino';
import type { Octokit, WriterIdentity } from '../github/github-forge.js';
import { isOwnComment } from '../github/own-comments.js';
import type { AttemptLog } from '../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { goalKeyFor } from '../steering/issue-goal.js';
import { STATUS_MARKER } from '../steering/report/status-comment.js';
import { type CarriedState, readCarriedState, seedLedger } from './carried-state.js';

/** Where the goal lives, as this run knows it from its environment (never from a comment). */
export interface GoalHome {
  owner: string;
  repo: string;
  cloneUrl: string;
  htmlUrl: string;
  defaultBranch: string;
}

/** One comment of the issue, as the rebuild and the replay of missed commands read it. */
export type IssueComment = Awaited<ReturnType<Octokit['rest']['issues']['listComments']>>['data'][number];

export interface GitHubGoalRecord {
  key: GoalKey;
  /** The goal as the status comment carries it; undefined: the issue has no goal yet. */
  state?: CarriedState;
  commentId?: number;
  /** Every comment of the issue, oldest first. */
  comments: IssueComment[];
}

/**
 * Reads an issue's goal from GitHub: its status comment (goal-loop's own: a status marker in a
 * person's comment is ignored; one in another bot's stops the run, since it may be goal-loop's own
 * under another name, and starting over would reset what was spent) holds the record; the goal
 * branch's checkpoints are read by the workspace when the goal runs (their trailers). A state that
 * cannot be read is an error, not a fresh start.
 */
export async function readGoalRecord(o: Octokit, self: WriterIdentity, home: GoalHome, issueNumber: number, log: Logger): Promise<GitHubGoalRecord> {
  const key = goalKeyFor(home.owner, home.repo, issueNumber);
  const comments = await o.paginate(o.rest.issues.listComments, { owner: home.owner, repo: home.repo, issue_number: issueNumber, per_page: 100 });
  const statusComments = comments.filter((c) => firstLine(c.body) === STATUS_MARKER);
  const own = statusComments.find((c) => isOwnComment(c, self));
  if (!own) {
    const other = statusComments.find((c) => c.user?.type === 'Bot');
    if (other) {
      throw new Error(
        `issue #${issueNumber} has a goal-loop status comment by ${other.user?.login}, and this run writes as ${'user' in self ? self.user : `${self.slug}[bot]`}: if goal-loop writes as ${other.user?.login} (an App's token), set the bot_login input to it`,
      );
    }
    if (statusComments.length > 0) log.warn({ issue: issueNumber, author: statusComments[0]!.user?.login }, "a goal-loop status comment by a person is ignored: only goal-loop's own carries a goal");
    return { key, comments };
  }
  const { state, problem } = readCarriedState(own.body ?? '');
  if (!state) {
    throw new Error(`the goal's status comment (${own.html_url}) carries no readable goal state${problem ? `: ${problem}` : ''}; edit or delete it to start the goal again`);
  }
  if (state.goalId !== key.goalId || state.github.issueNumber !== issueNumber) throw new Error(`the status comment ${own.html_url} carries the state of another goal (${state.goalId})`);
  return { key, state, commentId: own.id, comments };
}

/** Writes a goal record into an empty ledger, its GitHub home from this run's environment. */
export async function seedGoal(ledger: GoalLedger & Pick<AttemptLog, 'appendAttemptEntry'>, record: GitHubGoalRecord, home: GoalHome): Promise<void> {
  const { state, key } = record;
  if (!state || record.commentId === undefined) return;
  const github: GitHubGoal = { ...state.github, owner: home.owner, repo: home.repo, installationId: 0, cloneUrl: home.cloneUrl, htmlUrl: home.htmlUrl, defaultBranch: home.defaultBranch };
  await seedLedger(ledger, key, state, github);
  await ledger.setMeta(key, { statusCommentId: record.commentId });
}

const firstLine = (body: string | null | undefined) => (body ?? '').replace(/\r\n?/g, '\n').trim().split('\n')[0];
