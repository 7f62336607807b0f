import type { Ctx } from './responses.js';
import type { FakeCheckRun } from './types.js';
import { now, obj, type Reply, str } from './util.js';

export function createCheckRoutes(ctx: Ctx) {
  const { newId, pulls, checkRuns, checkRunJson, json, notFound, invalid, paged, violations } = ctx;

  /** What GitHub refuses in a check run's output (422): texts over 65,535 bytes of UTF-8 (GitHub counts bytes), over 50 annotations, an annotation without its required fields. */
  function outputProblems(method: string, b: Record<string, unknown>): Reply | undefined {
    const output = b.output && typeof b.output === 'object' ? (b.output as Record<string, unknown>) : undefined;
    if (!output) return undefined;
    const problems: string[] = [];
    for (const k of ['summary', 'text'] as const) {
      const v = output[k];
      if (typeof v === 'string' && Buffer.byteLength(v, 'utf8') > 65_535) problems.push(`output.${k} is ${Buffer.byteLength(v, 'utf8')} bytes (summary exceeds a maximum bytesize of 65535)`);
    }
    const list = output.annotations;
    if (list !== undefined) {
      if (!Array.isArray(list)) problems.push('output.annotations is not an array');
      else {
        if (list.length > 50) problems.push(`output.annotations has ${list.length} items (at most 50 per request)`);
        for (const a of list as Record<string, unknown>[]) {
          for (const f of ['path', 'start_line', 'end_line', 'annotation_level', 'message']) if (a?.[f] === undefined) problems.push(`an annotation lacks "${f}"`);
          if (!['notice', 'warning', 'failure'].includes(String(a?.annotation_level))) problems.push(`annotation_level ${String(a?.annotation_level)}`);
          if (typeof a?.start_line !== 'number' || typeof a?.end_line !== 'number') problems.push('annotation lines must be integers');
          if (a?.start_column !== undefined && a.start_line !== a.end_line) problems.push('annotation columns on more than one line');
        }
      }
    }
    if (problems.length === 0) return undefined;
    violations.push(...problems.map((p) => `${method} check-runs: ${p}`));
    return invalid(
      'Invalid request.',
      problems.map((message) => ({ resource: 'CheckRun', code: 'custom', message })),
    );
  }

  function routeChecks(method: string, url: URL, body: unknown, rest: string[]): Reply | undefined {
    const r = (i: number): string | undefined => rest[i];

    // --- check runs ---
    if (r(0) === 'check-runs') {
      if (rest.length === 1 && method === 'POST') {
        const b = obj(body);
        const name = str(b.name);
        const headSha = str(b.head_sha);
        if (!name || !headSha) return invalid('Invalid request.\n\n"name" and "head_sha" are required.');
        const refused = outputProblems(method, b);
        if (refused) return refused;
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
          annotations: [],
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
          const refused = outputProblems(method, obj(body));
          if (refused) return refused;
          applyCheckRun(c, obj(body));
          return json(200, checkRunJson(c));
        }
      }
      if (rest.length === 3 && r(2) === 'annotations' && method === 'GET') {
        if (!c) return notFound();
        return paged(
          url,
          c.annotations.map((a) => ({ start_column: null, end_column: null, title: null, raw_details: null, blob_href: `https://github.com/fake/blob/${c.headSha}/${String(a.path)}`, ...a })),
        );
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
    if (b.output && typeof b.output === 'object') {
      const { annotations, ...rest } = b.output as Record<string, unknown>;
      c.output = { ...c.output, ...rest };
      if (Array.isArray(annotations)) c.annotations.push(...(annotations as Record<string, unknown>[]));
    }
  }

  return { routeChecks, applyCheckRun };
}
