import { type FakeCheckRun } from './types.js';
import { now, obj, str, type Reply } from './util.js';
import type { Ctx } from './responses.js';

export function createCheckRoutes(ctx: Ctx) {
  const { newId, pulls, checkRuns, checkRunJson, json, notFound, invalid, paged } = ctx;

  function routeChecks(method: string, url: URL, body: unknown, rest: string[]): Reply | undefined {
    const r = (i: number): string | undefined => rest[i];

    // --- check runs ---
    if (r(0) === 'check-runs') {
      if (rest.length === 1 && method === 'POST') {
        const b = obj(body);
        const name = str(b.name);
        const headSha = str(b.head_sha);
        if (!name || !headSha) return invalid('Invalid request.\n\n"name" and "head_sha" are required.');
        const id = newId();
        const c: FakeCheckRun = {
          id,
          nodeId: `CR_fake${id}`,
          name,
          headSha,
          status: 'queued',
          conclusion: null,
          output: null,
          detailsUrl: null,
          externalId: null,
          startedAt: now(),
          completedAt: null,
          history: [],
        };
        applyCheckRun(c, b);
        checkRuns.push(c);
        return json(201, checkRunJson(c));
      }
      const c = checkRuns.find((x) => x.id === Number(r(1)));
      if (rest.length === 2) {
        if (!c) return notFound();
        if (method === 'GET') return json(200, checkRunJson(c));
        if (method === 'PATCH') {
          applyCheckRun(c, obj(body));
          return json(200, checkRunJson(c));
        }
      }
      return undefined;
    }
    if (r(0) === 'commits' && rest.length === 3 && r(2) === 'check-runs' && method === 'GET') {
      const ref = r(1) ?? '';
      const shas = new Set([ref, ...pulls.filter((p) => p.head === ref).map((p) => p.headSha)]);
      const name = url.searchParams.get('check_name');
      const list = checkRuns.filter((c) => shas.has(c.headSha) && (!name || c.name === name)).reverse();
      return paged(url, list.map(checkRunJson), (items) => ({ total_count: list.length, check_runs: items }));
    }

    return undefined;
  }

  function applyCheckRun(c: FakeCheckRun, b: Record<string, unknown>): void {
    c.history.push(b);
    if (typeof b.name === 'string') c.name = b.name;
    if (typeof b.status === 'string') c.status = b.status;
    if (typeof b.conclusion === 'string') {
      c.conclusion = b.conclusion;
      c.status = 'completed';
    }
    if (c.status === 'completed' && !c.completedAt) c.completedAt = str(b.completed_at) ?? now();
    if (typeof b.started_at === 'string') c.startedAt = b.started_at;
    if (typeof b.details_url === 'string') c.detailsUrl = b.details_url;
    if (typeof b.external_id === 'string') c.externalId = b.external_id;
    if (b.output && typeof b.output === 'object') c.output = { ...(c.output ?? {}), ...(b.output as Record<string, unknown>) };
  }

  return { routeChecks, applyCheckRun };
}
