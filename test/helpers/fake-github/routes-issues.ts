import type { Ctx } from './responses.js';
import type { FakeIssue, FakeReaction } from './types.js';
import { now, obj, REACTIONS, type Reply, str, userJson } from './util.js';

export function createIssueRoutes(ctx: Ctx) {
  const { repoApi, newId, issues, comments, reactions, ensureLabel, addIssue, nextNumber, addComment, labelJson, issueJson, commentJson, json, notFound, invalid, noContent, paged, touch } = ctx;

  function findIssue(n: string | undefined): FakeIssue | undefined {
    return issues.get(Number(n));
  }

  function labelNames(body: unknown): string[] | undefined {
    const raw = Array.isArray(body) ? body : obj(body).labels;
    if (!Array.isArray(raw)) return undefined;
    return raw.map((l) => (typeof l === 'string' ? l : (str(obj(l).name) ?? ''))).filter((l) => l !== '');
  }

  function addLabelsTo(i: FakeIssue, names: string[]): void {
    for (const n of names) {
      ensureLabel(n);
      if (!i.labels.some((l) => l.toLowerCase() === n.toLowerCase())) i.labels.push(n);
    }
    touch(i);
  }

  function react(subject: FakeReaction['subject'], subjectId: number, body: unknown): Reply {
    const content = str(obj(body).content) ?? '';
    if (!REACTIONS.has(content)) return invalid('Validation Failed', [{ resource: 'Reaction', field: 'content', code: 'invalid' }]);
    const existing = reactions.find((x) => x.subject === subject && x.subjectId === subjectId && x.content === content && x.user === ctx.writer());
    const r = existing ?? { id: newId(), subject, subjectId, content, user: ctx.writer() };
    if (!existing) reactions.push(r);
    return json(existing ? 200 : 201, { id: r.id, node_id: `REA_fake${r.id}`, user: userJson(r.user), content: r.content, created_at: now() });
  }

  /** GitHub refuses a comment body over 65,536 bytes of UTF-8 (it counts bytes, not characters). */
  function tooLong(text: string): Reply {
    ctx.violations.push(`comment body is ${Buffer.byteLength(text, 'utf8')} bytes (at most 65536)`);
    return invalid('Validation Failed', [{ resource: 'IssueComment', code: 'custom', field: 'body', message: 'body is too long (maximum is 65536 characters)' }]);
  }

  function routeIssues(method: string, url: URL, body: unknown, rest: string[]): Reply | undefined {
    const r = (i: number): string | undefined => rest[i];

    // --- issue comments of the whole repo ---
    if (method === 'GET' && r(0) === 'issues' && r(1) === 'comments' && rest.length === 2) {
      return paged(url, comments.filter((c) => !c.deleted).map(commentJson));
    }

    // --- issue comments by id ---
    if (r(0) === 'issues' && r(1) === 'comments' && rest.length >= 3) {
      const c = comments.find((x) => x.id === Number(r(2)) && !x.deleted);
      if (rest.length === 3) {
        if (!c) return notFound();
        if (method === 'GET') return json(200, commentJson(c));
        if (method === 'PATCH') {
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          if (Buffer.byteLength(text, 'utf8') > 65_536) return tooLong(text);
          c.body = text;
          c.history.push(text);
          c.updatedAt = now();
          return json(200, commentJson(c));
        }
        if (method === 'DELETE') {
          c.deleted = true;
          return noContent();
        }
      }
      if (rest.length === 4 && r(3) === 'reactions') {
        if (!c) return notFound();
        if (method === 'POST') return react('issue_comment', c.id, body);
        if (method === 'GET') {
          const content = url.searchParams.get('content');
          return paged(
            url,
            reactions
              .filter((x) => !content || x.content === content)
              .filter((x) => x.subject === 'issue_comment' && x.subjectId === c.id)
              .map((x) => ({ id: x.id, node_id: `REA_fake${x.id}`, user: userJson(x.user), content: x.content, created_at: now() })),
          );
        }
      }
      if (rest.length === 5 && r(3) === 'reactions' && method === 'DELETE') {
        const i = reactions.findIndex((x) => x.subject === 'issue_comment' && x.subjectId === c?.id && x.id === Number(r(4)));
        if (!c || i < 0) return notFound();
        reactions.splice(i, 1);
        return noContent();
      }
      return undefined;
    }

    // --- issues ---
    if (r(0) === 'issues' && rest.length === 1) {
      if (method === 'GET') {
        const state = url.searchParams.get('state') ?? 'open';
        const want = (url.searchParams.get('labels') ?? '')
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean);
        const list = [...issues.values()]
          .filter((i) => state === 'all' || i.state === state)
          .filter((i) => want.every((w) => i.labels.some((l) => l.toLowerCase() === w)))
          .sort((a, b) => b.number - a.number)
          .map(issueJson);
        return paged(url, list);
      }
      if (method === 'POST') {
        const b = obj(body);
        const i = addIssue({
          number: nextNumber(),
          title: str(b.title) ?? '',
          body: str(b.body) ?? null,
          user: ctx.writer(),
          labels: labelNames(b) ?? [],
          assignees: Array.isArray(b.assignees) ? (b.assignees as unknown[]).filter((x): x is string => typeof x === 'string') : [],
        });
        return json(201, issueJson(i));
      }
    }
    if (r(0) === 'issues' && rest.length >= 2 && /^\d+$/.test(r(1) ?? '')) {
      const i = findIssue(r(1));
      if (!i) return notFound();
      if (rest.length === 2) {
        if (method === 'GET') return json(200, issueJson(i));
        if (method === 'PATCH') {
          const b = obj(body);
          if (typeof b.title === 'string') i.title = b.title;
          if ('body' in b) i.body = str(b.body) ?? null;
          if (b.state === 'open' || b.state === 'closed') {
            i.state = b.state;
            i.closedAt = b.state === 'closed' ? now() : null;
            i.stateReason = b.state === 'closed' ? (str(b.state_reason) ?? 'completed') : 'reopened';
          }
          const names = labelNames(b);
          if (names) {
            i.labels = [];
            addLabelsTo(i, names);
          }
          if (Array.isArray(b.assignees)) i.assignees = (b.assignees as unknown[]).filter((x): x is string => typeof x === 'string');
          touch(i);
          return json(200, issueJson(i));
        }
      }
      const sub = r(2);
      if (sub === 'comments' && rest.length === 3) {
        if (method === 'GET') {
          return paged(url, comments.filter((c) => c.issueNumber === i.number && !c.deleted).map(commentJson));
        }
        if (method === 'POST') {
          const text = str(obj(body).body);
          if (text === undefined) return invalid('Invalid request.\n\n"body" wasn\'t supplied.');
          if (Buffer.byteLength(text, 'utf8') > 65_536) return tooLong(text);
          const c = addComment(i.number, text, ctx.writer());
          touch(i);
          return json(201, commentJson(c), { location: `${repoApi}/issues/comments/${c.id}` });
        }
      }
      if (sub === 'labels') {
        if (rest.length === 3) {
          if (method === 'GET') return paged(url, i.labels.map(labelJson));
          if (method === 'POST' || method === 'PUT') {
            const names = labelNames(body);
            if (!names) return invalid('Invalid request.\n\n"labels" wasn\'t supplied.');
            if (method === 'PUT') i.labels = [];
            addLabelsTo(i, names);
            return json(200, i.labels.map(labelJson));
          }
          if (method === 'DELETE') {
            i.labels = [];
            touch(i);
            return noContent();
          }
        }
        if (rest.length === 4 && method === 'DELETE') {
          const name = (r(3) ?? '').toLowerCase();
          if (!i.labels.some((l) => l.toLowerCase() === name)) return notFound('Label does not exist');
          i.labels = i.labels.filter((l) => l.toLowerCase() !== name);
          touch(i);
          return json(200, i.labels.map(labelJson));
        }
      }
      if (sub === 'assignees' && rest.length === 3) {
        const who = Array.isArray(obj(body).assignees) ? (obj(body).assignees as unknown[]).filter((x): x is string => typeof x === 'string') : [];
        if (method === 'POST') i.assignees = [...new Set([...i.assignees, ...who])];
        else if (method === 'DELETE') i.assignees = i.assignees.filter((a) => !who.includes(a));
        else return undefined;
        touch(i);
        return json(201, issueJson(i));
      }
      if (sub === 'reactions' && rest.length === 3 && method === 'POST') return react('issue', i.number, body);
      return undefined;
    }

    return undefined;
  }

  return { findIssue, labelNames, addLabelsTo, react, routeIssues };
}

export type IssueRoutes = ReturnType<typeof createIssueRoutes>;
