import type { Ctx } from './responses.js';
import type { IssueRoutes } from './routes-issues.js';
import type { FakePull, ReviewState } from './types.js';
import { obj, type Reply, str } from './util.js';

export function createPullRoutes(ctx: Ctx & IssueRoutes) {
  const { owner, defaultBranch, pulls, reviews, reviewComments, addPull, addReview, addReviewComment, pullJson, reviewJson, reviewCommentJson, json, notFound, invalid, paged, touch, react } = ctx;

  function findPull(n: string | undefined): FakePull | undefined {
    return pulls.find((p) => p.number === Number(n));
  }

  /** GitHub refuses a pull request body over 65,536 characters. */
  function bodyTooLong(b: Record<string, unknown>): Reply | undefined {
    // GitHub counts the body's UTF-8 bytes, not its characters.
    if (typeof b.body !== 'string' || Buffer.byteLength(b.body, 'utf8') <= 65_536) return undefined;
    ctx.violations.push(`pull request body is ${Buffer.byteLength(b.body, 'utf8')} bytes (at most 65536)`);
    return invalid('Validation Failed', [{ resource: 'PullRequest', code: 'custom', field: 'body', message: 'body is too long (maximum is 65536 characters)' }]);
  }

  function routePulls(method: string, url: URL, body: unknown, rest: string[]): Reply | undefined {
    const r = (i: number): string | undefined => rest[i];

    // --- pull requests ---
    if (r(0) === 'pulls' && rest.length === 1) {
      if (method === 'GET') {
        const state = url.searchParams.get('state') ?? 'open';
        const head = url.searchParams.get('head');
        const baseRef = url.searchParams.get('base');
        const list = pulls
          .filter((p) => state === 'all' || p.state === state)
          .filter((p) => {
            if (!head) return true;
            const [who, ref] = head.includes(':') ? [head.slice(0, head.indexOf(':')), head.slice(head.indexOf(':') + 1)] : [head, undefined];
            // GitHub ignores a head filter without a branch only when it names the owner.
            // `user:ref`: the head's owner, which for a fork is not the repository's.
            if (ref === undefined) return who.toLowerCase() === owner.toLowerCase();
            return who.toLowerCase() === p.headOwner.toLowerCase() && ref === p.head;
          })
          .filter((p) => !baseRef || p.base === baseRef)
          .sort((a, b) => b.number - a.number)
          .map(pullJson);
        return paged(url, list);
      }
      if (method === 'POST') {
        const b = obj(body);
        const headRaw = str(b.head) ?? '';
        const head = headRaw.includes(':') ? headRaw.slice(headRaw.indexOf(':') + 1) : headRaw;
        const baseRef = str(b.base) ?? defaultBranch;
        if (!head) return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'head', code: 'missing_field' }]);
        const tooLong = bodyTooLong(b);
        if (tooLong) return tooLong;
        if (!str(b.title) && b.issue === undefined) {
          return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'title', code: 'missing_field' }]);
        }
        if (head === baseRef) return invalid('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${baseRef} and ${head}` }]);
        if (pulls.some((x) => x.state === 'open' && x.head === head && x.headOwner === owner && x.base === baseRef)) {
          return invalid('Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${owner}:${head}.` }]);
        }
        const p = addPull({ title: str(b.title) ?? '', body: str(b.body) ?? null, head, base: baseRef, draft: b.draft === true, user: ctx.writer() });
        return json(201, pullJson(p));
      }
    }
    if (r(0) === 'pulls' && rest.length >= 2 && /^\d+$/.test(r(1) ?? '')) {
      const p = findPull(r(1));
      if (!p) return notFound();
      if (rest.length === 2) {
        if (method === 'GET') return json(200, pullJson(p));
        if (method === 'PATCH') {
          const b = obj(body);
          const tooLong = bodyTooLong(b);
          if (tooLong) return tooLong;
          if (typeof b.title === 'string') p.title = b.title;
          if ('body' in b) p.body = str(b.body) ?? null;
          if (typeof b.base === 'string') p.base = b.base;
          if (b.state === 'open' || b.state === 'closed') p.state = b.state;
          touch(p.issue);
          return json(200, pullJson(p));
        }
      }
      if (r(2) === 'reviews') {
        const list = reviews.filter((x) => x.pullNumber === p.number);
        if (rest.length === 3 && method === 'GET') return paged(url, list.map(reviewJson));
        if (rest.length === 3 && method === 'POST') {
          const b = obj(body);
          const event = str(b.event);
          const state: ReviewState = event === 'APPROVE' ? 'APPROVED' : event === 'REQUEST_CHANGES' ? 'CHANGES_REQUESTED' : event === 'COMMENT' ? 'COMMENTED' : 'PENDING';
          const added = addReview({
            pullNumber: p.number,
            state,
            body: str(b.body) ?? null,
            user: ctx.writer(),
            comments: Array.isArray(b.comments) ? (b.comments as unknown[]).map((c) => ({ body: str(obj(c).body) ?? '', path: str(obj(c).path) ?? '', line: Number(obj(c).line) || undefined })) : [],
          });
          return json(200, reviewJson(added.review));
        }
        const review = list.find((x) => x.id === Number(r(3)));
        if (rest.length === 4 && method === 'GET') return review ? json(200, reviewJson(review)) : notFound();
        if (rest.length === 5 && r(4) === 'comments' && method === 'GET') {
          if (!review) return notFound();
          return paged(url, reviewComments.filter((c) => c.reviewId === review.id).map(reviewCommentJson));
        }
        return undefined;
      }
      if (r(2) === 'comments') {
        if (rest.length === 3 && method === 'GET') {
          return paged(url, reviewComments.filter((c) => c.pullNumber === p.number).map(reviewCommentJson));
        }
        if (rest.length === 5 && r(4) === 'replies' && method === 'POST') {
          const parent = reviewComments.find((x) => x.id === Number(r(3)) && x.pullNumber === p.number);
          if (!parent) return notFound();
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          const c = addReviewComment(p.number, null, text, ctx.writer(), parent.path, parent.line, parent.inReplyToId ?? parent.id);
          return json(201, reviewCommentJson(c));
        }
      }
      return undefined;
    }
    if (r(0) === 'pulls' && r(1) === 'comments' && rest.length === 4 && r(3) === 'reactions' && method === 'POST') {
      const c = reviewComments.find((x) => x.id === Number(r(2)));
      return c ? react('review_comment', c.id, body) : notFound();
    }

    return undefined;
  }

  return { findPull, routePulls };
}
