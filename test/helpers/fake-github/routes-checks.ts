import type { Ctx } from './responses.js';
import type { FakeAnnotationSeed, FakeCheckRun, FakeCheckRunSeed, FakeGitHubOptions, FakeStatus } from './types.js';
import { fakeSha, now, obj, type Reply, str } from './util.js';

/** The CI app a check run added by a test comes from, unless it names another. */
export const CI_APP = { id: 9001, slug: 'ci-app' } as const;

const SHA = /^[0-9a-f]{40}$/i;

export function createCheckRoutes(opts: FakeGitHubOptions, ctx: Ctx) {
  const { newId, pulls, checkRuns, statuses, defaultBranch, repoApi, checkRunJson, checkSuiteJson, statusJson, minimalRepoJson, json, notFound, invalid, paged, violations } = ctx;

  /** The commits a ref names: a sha is itself; a branch is what the test's repo says, or the head of a PR from it. */
  function shasOf(ref: string): string[] {
    if (SHA.test(ref)) return [ref.toLowerCase()];
    const resolved = opts.resolveSha?.(ref);
    return [...new Set([...(resolved ? [resolved] : []), ...pulls.filter((p) => p.head === ref).map((p) => p.headSha)])];
  }

  function newCheckRun(name: string, headSha: string): FakeCheckRun {
    const id = newId();
    return {
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
  }

  function addCheckRun(seed: FakeCheckRunSeed): FakeCheckRun {
    const c = newCheckRun(seed.name, seed.headSha);
    c.app = { ...(seed.app ?? CI_APP) };
    c.status = seed.status ?? (seed.conclusion !== undefined ? 'completed' : 'queued');
    if (seed.conclusion !== undefined && c.status !== 'completed') throw new Error('fakeGitHub.addCheckRun: a conclusion needs status completed');
    if (c.status === 'completed') {
      if (seed.conclusion === undefined) throw new Error('fakeGitHub.addCheckRun: a completed run needs a conclusion');
      c.conclusion = seed.conclusion;
      c.completedAt = now();
    }
    c.output = seed.output ? { ...seed.output } : null;
    c.detailsUrl = seed.detailsUrl ?? null;
    c.annotations.push(...(seed.annotations ?? []).map((a) => ({ ...a })));
    if (seed.fromFork) c.fromFork = true;
    checkRuns.push(c);
    return c;
  }

  function completeCheckRun(id: number, conclusion: string, output?: { title?: string; summary?: string; text?: string; annotations?: FakeAnnotationSeed[] }): FakeCheckRun {
    const c = checkRuns.find((x) => x.id === id);
    if (!c) throw new Error(`fakeGitHub: no check run ${id}`);
    c.status = 'completed';
    c.conclusion = conclusion;
    c.completedAt = now();
    if (output) {
      const { annotations, ...rest } = output;
      c.output = { ...c.output, ...rest };
      c.annotations.push(...(annotations ?? []).map((a) => ({ ...a })));
    }
    return c;
  }

  function addStatus(s: { sha: string; context: string; state: FakeStatus['state']; description?: string; targetUrl?: string }): FakeStatus {
    const id = newId();
    const st: FakeStatus = {
      id,
      nodeId: `SC_fake${id}`,
      sha: s.sha.toLowerCase(),
      context: s.context,
      state: s.state,
      description: s.description ?? null,
      targetUrl: s.targetUrl ?? null,
      createdAt: now(),
    };
    statuses.push(st);
    return st;
  }

  /** GET commits/{ref}/status: each context's latest status (newest first) and the state they combine to. */
  function combinedStatus(url: URL, ref: string): Reply {
    const sha = shasOf(ref)[0] ?? (ref === defaultBranch ? fakeSha(`base:${ref}`) : undefined);
    if (sha === undefined) return notFound(`No commit found for SHA: ${ref}`);
    const latest = new Map<string, FakeStatus>();
    for (const st of statuses) if (st.sha === sha) latest.set(st.context, st);
    const list = [...latest.values()].sort((a, b) => b.id - a.id);
    const states = list.map((st) => st.state);
    const state = states.some((x) => x === 'failure' || x === 'error') ? 'failure' : states.length === 0 || states.includes('pending') ? 'pending' : 'success';
    return paged(url, list.map(statusJson), (items) => ({
      state,
      statuses: items,
      sha,
      total_count: list.length,
      repository: minimalRepoJson(),
      commit_url: `${repoApi}/commits/${sha}`,
      url: `${repoApi}/commits/${sha}/status`,
    }));
  }

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
        const c = newCheckRun(name, headSha);
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
      const shas = new Set([ref, ...shasOf(ref)]);
      const name = url.searchParams.get('check_name');
      const status = url.searchParams.get('status');
      const appId = url.searchParams.get('app_id');
      const appOf = (c: FakeCheckRun): number => c.app?.id ?? ctx.appId;
      let list = checkRuns.filter((c) => shas.has(c.headSha) && (!name || c.name === name) && (!status || c.status === status) && (!appId || String(appOf(c)) === appId)).reverse();
      // filter=latest (GitHub's default): a re-run's newer run hides the older ones of its app and name.
      if (url.searchParams.get('filter') !== 'all') list = list.filter((c, i) => list.findIndex((x) => x.name === c.name && appOf(x) === appOf(c)) === i);
      return paged(url, list.map(checkRunJson), (items) => ({ total_count: list.length, check_runs: items }));
    }
    if (r(0) === 'commits' && rest.length === 3 && r(2) === 'status' && method === 'GET') return combinedStatus(url, r(1) ?? '');
    if (r(0) === 'commits' && rest.length === 3 && r(2) === 'check-suites' && method === 'GET') {
      const ref = r(1) ?? '';
      const shas = new Set([ref, ...shasOf(ref)]);
      // One suite per app, commit and origin; a push's names the branch that points at the commit.
      const branchOf = (sha: string): string => (SHA.test(ref) ? (pulls.find((p) => p.headSha === sha)?.head ?? defaultBranch) : ref);
      const suites = new Map<string, { run: FakeCheckRun; runs: number }>();
      for (const c of checkRuns.filter((x) => shas.has(x.headSha))) {
        const key = `${c.app?.id ?? ctx.appId}:${c.headSha}:${c.fromFork ? 'fork' : 'repo'}`;
        const seen = suites.get(key);
        if (seen) seen.runs++;
        else suites.set(key, { run: c, runs: 1 });
      }
      const list = [...suites.values()].map((x) => checkSuiteJson(x.run, branchOf(x.run.headSha), x.runs));
      return paged(url, list, (items) => ({ total_count: list.length, check_suites: items }));
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

  return { routeChecks, applyCheckRun, addCheckRun, completeCheckRun, addStatus };
}
