import type { Octokit, WriterIdentity } from '../github/github-forge.js';
import type { EventBase, EventOf } from '../steering/events.js';

type Review = Awaited<ReturnType<Octokit['rest']['pulls']['listReviews']>>['data'][number];

/** The goal's pull request and its reviews, as a run replays them. */
export interface ReviewSource {
  prNumber: number;
  headRef: string;
  headRepo: { id: number; fullName: string } | null;
  baseRepo: { id: number; fullName: string };
  reviews: readonly Review[];
}

/** The goal's pull request with its reviews; undefined when the goal has none yet. */
export async function reviewSource(o: Octokit, owner: string, repo: string, prNumber: number | undefined): Promise<ReviewSource | undefined> {
  if (prNumber === undefined) return undefined;
  const { data: pr } = await o.rest.pulls.get({ owner, repo, pull_number: prNumber });
  const reviews = await o.paginate(o.rest.pulls.listReviews, { owner, repo, pull_number: prNumber, per_page: 100 });
  const ref = (r: { id: number; full_name: string } | null) => (r ? { id: r.id, fullName: r.full_name } : null);
  return { prNumber, headRef: pr.head.ref, headRepo: ref(pr.head.repo), baseRepo: ref(pr.base.repo)!, reviews };
}

/**
 * Reviews a run must apply before its own event, as missed-commands.ts does for commands: a
 * review's run may be cancelled while it waits in the pull request's concurrency group. Those the
 * App acts on (changes requested, or comments), by people, newer than `lastReviewId`, oldest first.
 */
export function missedReviewEvents(source: ReviewSource | undefined, after: number, self: WriterIdentity, base: Omit<EventBase, 'sender' | 'deliveryId'>): EventOf<'review'>[] {
  if (!source) return [];
  const out: EventOf<'review'>[] = [];
  for (const r of source.reviews) {
    const state = r.state.toLowerCase();
    if (r.id <= after || !r.user?.login || (state !== 'changes_requested' && state !== 'commented')) continue;
    if (r.user.type === 'Bot' || r.user.login.endsWith('[bot]') || ('user' in self && r.user.login === self.user)) continue;
    out.push({
      ...base,
      deliveryId: `review-${r.id}`,
      sender: r.user.login,
      type: 'review',
      prNumber: source.prNumber,
      headRef: source.headRef,
      headRepo: source.headRepo,
      baseRepo: source.baseRepo,
      reviewId: r.id,
      state,
      body: r.body ?? null,
    });
  }
  return out.sort((a, b) => a.reviewId - b.reviewId);
}

/** The newest review id (0: none). */
export const newestReviewId = (source: ReviewSource | undefined): number => Math.max(0, ...(source?.reviews.map((r) => r.id) ?? []));
