import type { Ctx } from './responses.js';
import { fakeSha, obj, type Reply, ROLE, str, userJson } from './util.js';

/** Numbers each fake, so a token one fake handed out is never valid at another (an earlier test's). */
let fakeInstances = 0;

export function createRepoRoutes(ctx: Ctx) {
  const {
    installationId,
    defaultBranch,
    fullName,
    repoApi,
    repoHtml,
    collaborators,
    files,
    issues,
    pulls,
    requiredChecks,
    resolveSha,
    branchWithProtectionJson,
    repoLabels,
    graphqlCalls,
    tokens,
    tokenExpiry,
    ensureLabel,
    labelJson,
    repoJson,
    appJson,
    installationJson,
    baseHeaders,
    json,
    notFound,
    invalid,
    noContent,
    paged,
    touch,
  } = ctx;
  let tokenSeq = 0;
  const instance = ++fakeInstances;

  function routeApp(method: string, url: URL, body: unknown, segs: string[]): Reply | undefined {
    const at = (i: number): string | undefined => segs[i];

    // --- app and installation ---
    if (method === 'POST' && at(0) === 'app' && at(1) === 'installations' && at(3) === 'access_tokens' && segs.length === 4) {
      if (Number(at(2)) !== installationId) return notFound();
      const token = `ghs_f${instance}i${installationId}x${++tokenSeq}${'0'.repeat(30)}`.slice(0, 40);
      const expires = Date.now() + 3600_000;
      tokens.push(token);
      tokenExpiry.set(token, expires);
      return json(201, {
        token,
        expires_at: new Date(expires).toISOString().replace(/\.\d{3}Z$/, 'Z'),
        permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', metadata: 'read' },
        repository_selection: 'all',
      });
    }
    if (method === 'GET' && url.pathname === '/app') return json(200, appJson());
    if (method === 'GET' && at(0) === 'app' && at(1) === 'installations' && segs.length === 3) {
      return Number(at(2)) === installationId ? json(200, installationJson()) : notFound();
    }
    if (method === 'GET' && url.pathname === '/app/installations') return json(200, [installationJson()]);
    if (method === 'GET' && url.pathname === '/installation/repositories') {
      return json(200, { total_count: 1, repository_selection: 'all', repositories: [repoJson()] });
    }
    if (method === 'POST' && url.pathname === '/graphql') return graphql(body);

    return undefined;
  }

  function routeRepo(method: string, url: URL, body: unknown, headers: Record<string, string>, rest: string[]): Reply | undefined {
    const r = (i: number): string | undefined => rest[i];

    // --- repository ---
    if (rest.length === 0 && method === 'GET') return json(200, repoJson());
    if (method === 'GET' && rest.length === 1 && r(0) === 'installation') return json(200, installationJson());

    // --- contents ---
    if (method === 'GET' && r(0) === 'contents' && rest.length >= 2) {
      const path = rest.slice(1).join('/');
      const content = files.get(path);
      if (content === undefined) return notFound();
      const accept = headers.accept ?? '';
      if (/\.raw\b|\braw\b/.test(accept)) {
        return [200, content, { ...baseHeaders(), 'content-type': 'application/vnd.github.raw; charset=utf-8' }];
      }
      const sha = fakeSha(`blob ${content}`);
      return json(200, {
        type: 'file',
        encoding: 'base64',
        size: Buffer.byteLength(content),
        name: path.split('/').pop(),
        path,
        content: Buffer.from(content).toString('base64'),
        sha,
        url: `${repoApi}/contents/${path}`,
        git_url: `${repoApi}/git/blobs/${sha}`,
        html_url: `${repoHtml}/blob/${defaultBranch}/${path}`,
        download_url: `https://raw.githubusercontent.com/${fullName}/${defaultBranch}/${path}`,
        _links: { self: `${repoApi}/contents/${path}`, git: `${repoApi}/git/blobs/${sha}`, html: `${repoHtml}/blob/${defaultBranch}/${path}` },
      });
    }

    // --- branches and their rules (the branch name may hold slashes) ---
    if (method === 'GET' && r(0) === 'branches' && rest.length >= 2 && !rest.includes('protection')) {
      const name = rest.slice(1).join('/');
      const sha = branchSha(name);
      return sha === undefined ? notFound('Branch not found') : json(200, branchWithProtectionJson(name, sha));
    }
    if (method === 'GET' && r(0) === 'rules' && r(1) === 'branches' && rest.length >= 3) {
      const name = rest.slice(2).join('/');
      const contexts = requiredChecks.get(name)?.ruleset;
      const rules =
        contexts === undefined
          ? []
          : [
              {
                type: 'required_status_checks',
                ruleset_source_type: 'Repository',
                ruleset_source: fullName,
                ruleset_id: 42,
                parameters: { strict_required_status_checks_policy: false, do_not_enforce_on_create: false, required_status_checks: contexts.map((context) => ({ context })) },
              },
            ];
      return paged(url, rules);
    }

    // --- collaborators ---
    if (method === 'GET' && r(0) === 'collaborators' && r(2) === 'permission' && rest.length === 3) {
      const login = r(1) ?? '';
      const perm = collaborators.get(login) ?? 'none';
      const role = ROLE[perm];
      return json(200, {
        permission: role.permission,
        role_name: role.role,
        user: { ...userJson(login), permissions: role.perms, role_name: role.role },
      });
    }

    // --- repo labels ---
    if (r(0) === 'labels') {
      if (method === 'GET' && rest.length === 1)
        return paged(
          url,
          [...repoLabels.values()].map((label) => labelJson(label.name)),
        );
      if (method === 'POST' && rest.length === 1) {
        const b = obj(body);
        const name = str(b.name) ?? '';
        if (repoLabels.has(name.toLowerCase())) return invalid('Validation Failed', [{ resource: 'Label', code: 'already_exists', field: 'name' }]);
        ensureLabel(name, str(b.color) ?? 'ededed', str(b.description) ?? null);
        return json(201, labelJson(name));
      }
      const l = repoLabels.get((r(1) ?? '').toLowerCase());
      if (rest.length === 2 && method === 'GET') return l ? json(200, labelJson(l.name)) : notFound();
      if (rest.length === 2 && method === 'PATCH') {
        if (!l) return notFound();
        const b = obj(body);
        if (str(b.color)) l.color = str(b.color) ?? l.color;
        if ('description' in b) l.description = str(b.description) ?? null;
        return json(200, labelJson(l.name));
      }
      if (rest.length === 2 && method === 'DELETE') {
        if (!l) return notFound();
        repoLabels.delete(l.name.toLowerCase());
        for (const i of issues.values()) i.labels = i.labels.filter((x) => x.toLowerCase() !== l.name.toLowerCase());
        return noContent();
      }
    }

    return undefined;
  }

  /** A branch this fake knows of: the default, one a PR names, one with required checks, or one the test's repo has. */
  function branchSha(name: string): string | undefined {
    const head = pulls.find((p) => p.head === name && p.headOwner === ctx.owner);
    const known = name === defaultBranch || requiredChecks.has(name) || pulls.some((p) => p.base === name);
    return resolveSha(name) ?? head?.headSha ?? (known ? fakeSha(`base:${name}`) : undefined);
  }

  function graphql(body: unknown): Reply {
    const b = obj(body);
    const query = str(b.query) ?? '';
    const variables = obj(b.variables);
    graphqlCalls.push({ query, variables });
    if (/\bmarkPullRequestReadyForReview\b/.test(query)) {
      const literal = /pullRequestId\s*:\s*"([^"]+)"/.exec(query)?.[1];
      const candidates = [literal, ...Object.values(variables).flatMap((v) => (typeof v === 'string' ? [v] : Object.values(obj(v))))];
      const p = pulls.find((x) => candidates.includes(x.nodeId));
      if (!p) {
        return json(200, {
          data: { markPullRequestReadyForReview: null },
          errors: [{ type: 'NOT_FOUND', path: ['markPullRequestReadyForReview'], message: `Could not resolve to a node with the global id of '${String(candidates.find(Boolean) ?? '')}'.` }],
        });
      }
      p.draft = false;
      touch(p.issue);
      return json(200, {
        data: {
          markPullRequestReadyForReview: {
            clientMutationId: str(obj(variables.input).clientMutationId) ?? null,
            pullRequest: { id: p.nodeId, number: p.number, isDraft: false, url: `${repoHtml}/pull/${p.number}` },
          },
        },
      });
    }
    if (/\b(addLabelsToLabelable|removeLabelsFromLabelable)\b/.test(query)) return labelMutations(query, variables);
    return json(200, { errors: [{ message: `fakeGitHub: unsupported GraphQL operation: ${query.slice(0, 120)}` }] });
  }

  /**
   * `addLabelsToLabelable` and `removeLabelsFromLabelable`, in the order the document names them
   * (GitHub runs a document's mutations one after another), with `$issue`, `$add`, `$remove`.
   */
  function labelMutations(query: string, variables: Record<string, unknown>): Reply {
    const issue = [...issues.values()].find((i) => i.nodeId === variables.issue);
    const ids = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
    const byId = (id: string) => [...repoLabels.values()].find((l) => l.nodeId === id);
    const unknown = [...ids(variables.add), ...ids(variables.remove)].find((id) => !byId(id));
    if (!issue || unknown !== undefined) {
      return json(200, { data: null, errors: [{ type: 'NOT_FOUND', message: `Could not resolve to a node with the global id of '${unknown ?? String(variables.issue)}'.` }] });
    }
    const data: Record<string, unknown> = {};
    for (const m of query.matchAll(/\b(addLabelsToLabelable|removeLabelsFromLabelable)\b/g)) {
      const names = ids(m[1] === 'addLabelsToLabelable' ? variables.add : variables.remove).map((id) => byId(id)!.name.toLowerCase());
      if (m[1] === 'addLabelsToLabelable') {
        for (const id of ids(variables.add)) if (!issue.labels.some((l) => l.toLowerCase() === byId(id)!.name.toLowerCase())) issue.labels.push(byId(id)!.name);
      } else issue.labels = issue.labels.filter((l) => !names.includes(l.toLowerCase()));
      data[m[1]!] = { clientMutationId: null };
    }
    touch(issue);
    return json(200, { data });
  }

  return { routeApp, routeRepo, graphql };
}
