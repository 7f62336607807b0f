import type { ProbotOctokit } from 'probot';
import type { GitHubGoal } from '../steering/goal-meta.js';

type Octokit = InstanceType<typeof ProbotOctokit>;

/** The marker that makes an outbox effect's comment findable, so a retry never posts it twice (`id`: loop/outbox.ts effectOnceId). */
export const effectMarker = (id: string) => `<!-- goal-loop:effect ${id} -->`;

/** This GitHub App: its id and slug (its bot user is `<slug>[bot]`); id 0 when unknown (an Action given only the bot's login). */
export interface AppIdentity {
  id: number;
  slug: string;
}

/** Whose writes are goal-loop's: an App's (the App, or an Action's workflow or App token), or a user's (an Action's personal access token). */
export type WriterIdentity = AppIdentity | { user: string };

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
export function isOwnComment(c: { user?: { login?: string; type?: string } | null; performed_via_github_app?: { id?: number } | null }, self: WriterIdentity): boolean {
  if ('user' in self) return !c.performed_via_github_app && c.user?.type !== 'Bot' && c.user?.login === self.user;
  if (self.id > 0 && c.performed_via_github_app?.id === self.id) return true;
  return c.user?.type === 'Bot' && c.user.login === `${self.slug}[bot]`;
}

/**
 * This App's comment carrying a marker, if there is one (searching every page). The marker must be
 * the body's first line (the status comment's) or its last (what `comment` appends): a marker
 * quoted anywhere else in a comment, e.g. inside a verification tail, is never taken for it.
 */
export async function findCommentByMarker(o: Octokit, g: Pick<GitHubGoal, 'owner' | 'repo' | 'issueNumber'>, marker: string, self: WriterIdentity): Promise<number | undefined> {
  const comments = await o.paginate(o.rest.issues.listComments, { owner: g.owner, repo: g.repo, issue_number: g.issueNumber, per_page: 100 });
  const carries = (body: string | undefined | null) => {
    const lines = (body ?? '').replace(/\r\n?/g, '\n').trim().split('\n');
    return lines[0] === marker || lines.at(-1) === marker;
  };
  return comments.find((c) => isOwnComment(c, self) && carries(c.body))?.id;
}
