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

export interface Rebuilt {
  key: GoalKey;
  /** The goal as the status comment carried it; undefined: the issue has no goal yet. */
  state?: CarriedState;
  commentId?: number;
}

/**
 * Rebuilds an issue's goal in an empty ledger from GitHub: its status comment (goal-loop's own:
 * a comment by anyone else carrying the marker is ignored, and said so) holds the record; the goal
 * branch's checkpoints are read by the workspace when the goal runs (their trailers). A state that
 * cannot be read is an error, not a fresh start: starting over would reset what was spent.
 */
export async function rebuildGoal(o: Octokit, self: WriterIdentity, home: GoalHome, issueNumber: number, ledger: GoalLedger & Pick<AttemptLog, 'appendAttemptEntry'>, log: Logger): Promise<Rebuilt> {
  const key = goalKeyFor(home.owner, home.repo, issueNumber);
  const comments = await o.paginate(o.rest.issues.listComments, { owner: home.owner, repo: home.repo, issue_number: issueNumber, per_page: 100 });
  const statusComments = comments.filter((c) => firstLine(c.body) === STATUS_MARKER);
  const own = statusComments.find((c) => isOwnComment(c, self));
  if (!own) {
    const other = statusComments[0]?.user?.login;
    if (other) log.warn({ issue: issueNumber, author: other }, 'a goal-loop status comment by another account is ignored (set the bot_login input if goal-loop writes as it)');
    return { key };
  }
  const { state, problem } = readCarriedState(own.body ?? '');
  if (!state) {
    // A status comment without a state (the App's, or an older release's) or a damaged one: never a silent restart.
    throw new Error(`the goal's status comment (${own.html_url}) carries no readable goal state${problem ? `: ${problem}` : ''}; edit or delete it to start the goal again`);
  }
  if (state.goalId !== key.goalId || state.github.issueNumber !== issueNumber) throw new Error(`the status comment ${own.html_url} carries the state of another goal (${state.goalId})`);
  const github: GitHubGoal = { ...state.github, owner: home.owner, repo: home.repo, installationId: 0, cloneUrl: home.cloneUrl, htmlUrl: home.htmlUrl, defaultBranch: home.defaultBranch };
  await seedLedger(ledger, key, state, github);
  await ledger.setMeta(key, { statusCommentId: own.id });
  return { key, state, commentId: own.id };
}

const firstLine = (body: string | null | undefined) => (body ?? '').replace(/\r\n?/g, '\n').trim().split('\n')[0];
