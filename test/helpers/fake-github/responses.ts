import type { Shapes } from './shapes.js';
import type { State } from './state.js';
import { API, type FakeIssue } from './types.js';
import { errorBody, now, type Reply } from './util.js';

export function createResponses(ctx: State) {
  const { requests } = ctx;

  // ---------- responses ----------

  const baseHeaders = (): Record<string, string> => ({
    'content-type': 'application/json; charset=utf-8',
    'x-github-media-type': 'github.v3; format=json',
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '4999',
    'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
    'x-ratelimit-used': '1',
    'x-ratelimit-resource': 'core',
    'x-github-request-id': `FAKE:${requests.length}`,
  });

  const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => [status, JSON.stringify(body), { ...baseHeaders(), ...headers }];
  const notFound = (message = 'Not Found'): Reply => json(404, errorBody(message, 404));
  const invalid = (message: string, errors: unknown[] = []): Reply => json(422, { ...errorBody(message, 422), errors });
  const noContent = (): Reply => [204, '', { ...baseHeaders(), 'content-type': 'text/plain' }];

  /** Pages a list with per_page/page and a Link header, as GitHub does. */
  function paged(url: URL, all: unknown[], wrap?: (items: unknown[]) => unknown): Reply {
    const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get('per_page') ?? 30) || 30));
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const items = all.slice((page - 1) * perPage, page * perPage);
    const link = (p: number, rel: string): string => {
      const u = new URL(url.pathname + url.search, API);
      u.searchParams.set('per_page', String(perPage));
      u.searchParams.set('page', String(p));
      return `<${u.toString()}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(page - 1, 'prev'));
    if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
    if (page > 1) links.push(link(1, 'first'));
    return json(200, wrap ? wrap(items) : items, links.length > 0 ? { link: links.join(', ') } : {});
  }

  function touch(i: FakeIssue): void {
    i.updatedAt = now();
  }

  return {
    baseHeaders,
    json,
    notFound,
    invalid,
    noContent,
    paged,
    touch,
  };
}

export type Responses = ReturnType<typeof createResponses>;

/** Everything a route handler can reach: the state, the JSON shapes and the reply builders. */
export type Ctx = State & Shapes & Responses;
