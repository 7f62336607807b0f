import { fakeId, fakeUserId } from '../webhook-payloads.js';
import type { State } from './state.js';
import { API, type FakeApp, type FakeCheckRun, type FakeComment, type FakeIssue, type FakePull, type FakeReview, type FakeReviewComment, type FakeStatus } from './types.js';
import { fakeSha, userJson } from './util.js';

export function createShapes(ctx: State) {
  const { owner, repo, installationId, defaultBranch, appSlug, appId, repoId, fullName, repoApi, repoHtml, collaborators, pulls, comments, ensureLabel, requiredChecks } = ctx;

  // ---------- JSON shapes ----------

  function labelJson(name: string): Record<string, unknown> {
    const l = ensureLabel(name);
    return {
      id: l.id,
      node_id: l.nodeId,
      url: `${repoApi}/labels/${encodeURIComponent(l.name)}`,
      name: l.name,
      color: l.color,
      default: false,
      description: l.description,
    };
  }

  function repoJson(): Record<string, unknown> {
    return {
      id: repoId,
      node_id: `R_fake${repoId}`,
      name: repo,
      full_name: fullName,
      private: false,
      owner: userJson(owner),
      html_url: repoHtml,
      url: repoApi,
      clone_url: `${repoHtml}.git`,
      git_url: `git://github.com/${fullName}.git`,
      ssh_url: `git@github.com:${fullName}.git`,
      default_branch: defaultBranch,
      fork: false,
      archived: false,
      disabled: false,
      visibility: 'public',
      permissions: { admin: false, maintain: false, push: true, triage: true, pull: true },
    };
  }

  function issueJson(i: FakeIssue): Record<string, unknown> {
    const base = `${repoApi}/issues/${i.number}`;
    return {
      id: i.id,
      node_id: i.nodeId,
      url: base,
      repository_url: repoApi,
      labels_url: `${base}/labels{/name}`,
      comments_url: `${base}/comments`,
      events_url: `${base}/events`,
      html_url: `${repoHtml}/${i.pull ? 'pull' : 'issues'}/${i.number}`,
      number: i.number,
      title: i.title,
      body: i.body,
      user: userJson(i.user),
      labels: i.labels.map(labelJson),
      state: i.state,
      state_reason: i.stateReason,
      locked: false,
      assignee: i.assignees[0] ? userJson(i.assignees[0]) : null,
      assignees: i.assignees.map(userJson),
      milestone: null,
      comments: comments.filter((c) => c.issueNumber === i.number && !c.deleted).length,
      created_at: i.createdAt,
      updated_at: i.updatedAt,
      closed_at: i.closedAt,
      author_association: i.user === owner ? 'OWNER' : collaborators.has(i.user) ? 'COLLABORATOR' : 'NONE',
      ...(i.pull
        ? {
            pull_request: {
              url: `${repoApi}/pulls/${i.number}`,
              html_url: `${repoHtml}/pull/${i.number}`,
              diff_url: `${repoHtml}/pull/${i.number}.diff`,
              patch_url: `${repoHtml}/pull/${i.number}.patch`,
              merged_at: i.pull.mergedAt,
            },
          }
        : {}),
    };
  }

  function commentJson(c: FakeComment): Record<string, unknown> {
    return {
      id: c.id,
      node_id: c.nodeId,
      url: `${repoApi}/issues/comments/${c.id}`,
      html_url: `${repoHtml}/issues/${c.issueNumber}#issuecomment-${c.id}`,
      issue_url: `${repoApi}/issues/${c.issueNumber}`,
      body: c.body,
      user: userJson(c.user),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      author_association: c.user === owner ? 'OWNER' : collaborators.has(c.user) ? 'COLLABORATOR' : 'NONE',
      performed_via_github_app: viaAppJson(c.user),
    };
  }

  /**
   * As GitHub: a comment an App's installation wrote is by its bot user (`<slug>[bot]`, type Bot)
   * and names the App in `performed_via_github_app`; this App's bot is this fake's app, any other
   * `[bot]` login another App of its own; a person's comment names none.
   */
  function viaAppJson(login: string): Record<string, unknown> | null {
    if (login === ctx.botLogin) return appJson();
    if (!login.endsWith('[bot]')) return null;
    const slug = login.replace(/\[bot\]$/, '');
    return otherAppJson({ id: fakeId(`app:${slug}`), slug });
  }

  /** Another App than this fake's: its own id, slug and page. */
  function otherAppJson(a: FakeApp): Record<string, unknown> {
    return { ...appJson(), id: a.id, slug: a.slug, node_id: `A_fake${a.id}`, name: a.slug, html_url: `https://github.com/apps/${a.slug}`, description: `another app (${a.slug})` };
  }

  /** A fork's repository: the same repository under another owner, with an id of its own. */
  function forkJson(forkOwner: string): Record<string, unknown> {
    const full = `${forkOwner}/${repo}`;
    const id = fakeId(`repo:${full}`);
    return {
      ...repoJson(),
      id,
      node_id: `R_fake${id}`,
      full_name: full,
      owner: userJson(forkOwner),
      html_url: `https://github.com/${full}`,
      url: `${API}/repos/${full}`,
      clone_url: `https://github.com/${full}.git`,
      git_url: `git://github.com/${full}.git`,
      ssh_url: `git@github.com:${full}.git`,
      fork: true,
      permissions: { admin: false, maintain: false, push: false, triage: false, pull: true },
    };
  }

  function branchJson(ref: string, sha: string, headOwner: string = owner): Record<string, unknown> {
    return { label: `${headOwner}:${ref}`, ref, sha, user: userJson(headOwner), repo: headOwner === owner ? repoJson() : forkJson(headOwner) };
  }

  function pullJson(p: FakePull): Record<string, unknown> {
    const base = `${repoApi}/pulls/${p.number}`;
    return {
      id: p.id,
      node_id: p.nodeId,
      url: base,
      html_url: `${repoHtml}/pull/${p.number}`,
      diff_url: `${repoHtml}/pull/${p.number}.diff`,
      patch_url: `${repoHtml}/pull/${p.number}.patch`,
      issue_url: `${repoApi}/issues/${p.number}`,
      commits_url: `${base}/commits`,
      review_comments_url: `${base}/comments`,
      comments_url: `${repoApi}/issues/${p.number}/comments`,
      statuses_url: `${repoApi}/statuses/${p.headSha}`,
      number: p.number,
      state: p.state,
      locked: false,
      title: p.title,
      body: p.body,
      user: userJson(p.user),
      labels: p.issue.labels.map(labelJson),
      assignee: p.issue.assignees[0] ? userJson(p.issue.assignees[0]) : null,
      assignees: p.issue.assignees.map(userJson),
      requested_reviewers: [],
      requested_teams: [],
      milestone: null,
      draft: p.draft,
      // As GitHub: a PR's head follows its branch (a push moves it); a fork's is what it was made with.
      head: branchJson(p.head, (p.headOwner === undefined || p.headOwner === owner ? ctx.resolveSha(p.head) : undefined) ?? p.headSha, p.headOwner),
      base: branchJson(p.base, fakeSha(`base:${p.base}`)),
      merged: p.merged,
      merged_at: p.mergedAt,
      merge_commit_sha: p.merged ? fakeSha(`merge:${p.number}`) : null,
      mergeable: p.state === 'open' ? true : null,
      mergeable_state: p.state === 'open' ? 'clean' : 'unknown',
      merged_by: p.merged ? userJson(owner) : null,
      created_at: p.issue.createdAt,
      updated_at: p.issue.updatedAt,
      closed_at: p.issue.closedAt,
      author_association: 'NONE',
      auto_merge: null,
      active_lock_reason: null,
      _links: {
        self: { href: base },
        html: { href: `${repoHtml}/pull/${p.number}` },
        issue: { href: `${repoApi}/issues/${p.number}` },
      },
    };
  }

  function reviewJson(r: FakeReview): Record<string, unknown> {
    return {
      id: r.id,
      node_id: r.nodeId,
      user: userJson(r.user),
      body: r.body ?? '',
      state: r.state,
      html_url: `${repoHtml}/pull/${r.pullNumber}#pullrequestreview-${r.id}`,
      pull_request_url: `${repoApi}/pulls/${r.pullNumber}`,
      submitted_at: r.submittedAt,
      commit_id: r.commitId,
      author_association: collaborators.has(r.user) ? 'COLLABORATOR' : 'NONE',
      _links: {
        html: { href: `${repoHtml}/pull/${r.pullNumber}#pullrequestreview-${r.id}` },
        pull_request: { href: `${repoApi}/pulls/${r.pullNumber}` },
      },
    };
  }

  function reviewCommentJson(c: FakeReviewComment): Record<string, unknown> {
    const pull = pulls.find((p) => p.number === c.pullNumber);
    return {
      id: c.id,
      node_id: c.nodeId,
      url: `${repoApi}/pulls/comments/${c.id}`,
      html_url: `${repoHtml}/pull/${c.pullNumber}#discussion_r${c.id}`,
      pull_request_url: `${repoApi}/pulls/${c.pullNumber}`,
      pull_request_review_id: c.reviewId,
      diff_hunk: '@@ -1 +1 @@',
      path: c.path,
      line: c.line,
      original_line: c.line,
      side: 'RIGHT',
      position: c.line,
      original_position: c.line,
      commit_id: pull?.headSha ?? '',
      original_commit_id: pull?.headSha ?? '',
      in_reply_to_id: c.inReplyToId ?? undefined,
      user: userJson(c.user),
      body: c.body,
      created_at: c.createdAt,
      updated_at: c.createdAt,
      author_association: collaborators.has(c.user) ? 'COLLABORATOR' : 'NONE',
      _links: {
        self: { href: `${repoApi}/pulls/comments/${c.id}` },
        html: { href: `${repoHtml}/pull/${c.pullNumber}#discussion_r${c.id}` },
        pull_request: { href: `${repoApi}/pulls/${c.pullNumber}` },
      },
    };
  }

  function checkRunJson(c: FakeCheckRun): Record<string, unknown> {
    return {
      id: c.id,
      node_id: c.nodeId,
      name: c.name,
      head_sha: c.headSha,
      external_id: c.externalId,
      url: `${repoApi}/check-runs/${c.id}`,
      html_url: `${repoHtml}/runs/${c.id}`,
      details_url: c.detailsUrl,
      status: c.status,
      conclusion: c.conclusion,
      started_at: c.startedAt,
      completed_at: c.completedAt,
      output: {
        title: c.output?.title ?? null,
        summary: c.output?.summary ?? null,
        text: c.output?.text ?? null,
        annotations_count: c.annotations.length,
        annotations_url: `${repoApi}/check-runs/${c.id}/annotations`,
      },
      check_suite: { id: suiteIdOf(c) },
      app: c.app ? otherAppJson(c.app) : appJson(),
      pull_requests: pulls
        .filter((p) => p.headSha === c.headSha)
        .map((p) => ({ id: p.id, number: p.number, url: `${repoApi}/pulls/${p.number}`, head: { ref: p.head, sha: p.headSha }, base: { ref: p.base, sha: fakeSha(`base:${p.base}`) } })),
    };
  }

  /** A check run's suite: one per app, commit and origin (this repository's push, or a fork's pull request). */
  function suiteIdOf(c: FakeCheckRun): number {
    return fakeId(`${c.app ? `suite:${c.app.slug}:${c.headSha}` : `suite:${c.headSha}`}${c.fromFork ? ':fork' : ''}`);
  }

  /** A check suite as `GET commits/{ref}/check-suites` shows it; `headBranch` null for a fork's. */
  function checkSuiteJson(c: FakeCheckRun, headBranch: string | null, runs: number): Record<string, unknown> {
    const id = suiteIdOf(c);
    return {
      id,
      node_id: `CS_fake${id}`,
      head_branch: c.fromFork ? null : headBranch,
      head_sha: c.headSha,
      status: c.status === 'completed' ? 'completed' : 'in_progress',
      conclusion: c.status === 'completed' ? c.conclusion : null,
      url: `${repoApi}/check-suites/${id}`,
      before: null,
      after: c.headSha,
      pull_requests: [],
      app: c.app ? otherAppJson(c.app) : appJson(),
      repository: minimalRepoJson(),
      created_at: c.startedAt ?? '2024-01-01T00:00:00Z',
      updated_at: c.completedAt ?? c.startedAt ?? '2024-01-01T00:00:00Z',
      head_commit: {
        id: c.headSha,
        tree_id: fakeSha(`tree:${c.headSha}`),
        message: 'commit',
        timestamp: '2024-01-01T00:00:00Z',
        author: { name: 'Ada', email: 'ada@example.com' },
        committer: { name: 'Ada', email: 'ada@example.com' },
      },
      latest_check_runs_count: runs,
      check_runs_url: `${repoApi}/check-suites/${id}/check-runs`,
      rerequestable: true,
      runs_rerequestable: true,
    };
  }

  /** The URLs and fields GitHub's `minimal-repository` requires. */
  function minimalRepoJson(): Record<string, unknown> {
    const u = repoApi;
    return {
      id: repoId,
      node_id: `R_fake${repoId}`,
      name: repo,
      full_name: fullName,
      owner: userJson(owner),
      private: false,
      html_url: repoHtml,
      description: null,
      fork: false,
      url: u,
      archive_url: `${u}/{archive_format}{/ref}`,
      assignees_url: `${u}/assignees{/user}`,
      blobs_url: `${u}/git/blobs{/sha}`,
      branches_url: `${u}/branches{/branch}`,
      collaborators_url: `${u}/collaborators{/collaborator}`,
      comments_url: `${u}/comments{/number}`,
      commits_url: `${u}/commits{/sha}`,
      compare_url: `${u}/compare/{base}...{head}`,
      contents_url: `${u}/contents/{+path}`,
      contributors_url: `${u}/contributors`,
      deployments_url: `${u}/deployments`,
      downloads_url: `${u}/downloads`,
      events_url: `${u}/events`,
      forks_url: `${u}/forks`,
      git_commits_url: `${u}/git/commits{/sha}`,
      git_refs_url: `${u}/git/refs{/sha}`,
      git_tags_url: `${u}/git/tags{/sha}`,
      hooks_url: `${u}/hooks`,
      issue_comment_url: `${u}/issues/comments{/number}`,
      issue_events_url: `${u}/issues/events{/number}`,
      issues_url: `${u}/issues{/number}`,
      keys_url: `${u}/keys{/key_id}`,
      labels_url: `${u}/labels{/name}`,
      languages_url: `${u}/languages`,
      merges_url: `${u}/merges`,
      milestones_url: `${u}/milestones{/number}`,
      notifications_url: `${u}/notifications{?since,all,participating}`,
      pulls_url: `${u}/pulls{/number}`,
      releases_url: `${u}/releases{/id}`,
      stargazers_url: `${u}/stargazers`,
      statuses_url: `${u}/statuses/{sha}`,
      subscribers_url: `${u}/subscribers`,
      subscription_url: `${u}/subscription`,
      tags_url: `${u}/tags`,
      teams_url: `${u}/teams`,
      trees_url: `${u}/git/trees{/sha}`,
    };
  }

  /** A commit status as the combined status lists it (`simple-commit-status`). */
  function statusJson(st: FakeStatus): Record<string, unknown> {
    return {
      id: st.id,
      node_id: st.nodeId,
      state: st.state,
      context: st.context,
      description: st.description,
      target_url: st.targetUrl,
      avatar_url: 'https://avatars.githubusercontent.com/u/9919?v=4',
      url: `${repoApi}/statuses/${st.sha}`,
      created_at: st.createdAt,
      updated_at: st.createdAt,
      required: null,
    };
  }

  /** A commit as GET branches/{branch} embeds it (`commit`): this fake knows only its sha. */
  function commitJson(sha: string): Record<string, unknown> {
    const who = { name: owner, email: `${owner}@users.noreply.github.com`, date: '2024-01-01T00:00:00Z' };
    return {
      sha,
      node_id: `C_fake${sha.slice(0, 12)}`,
      url: `${repoApi}/commits/${sha}`,
      html_url: `${repoHtml}/commit/${sha}`,
      comments_url: `${repoApi}/commits/${sha}/comments`,
      commit: {
        url: `${repoApi}/git/commits/${sha}`,
        author: who,
        committer: who,
        message: 'commit',
        comment_count: 0,
        tree: { sha: fakeSha(`tree:${sha}`), url: `${repoApi}/git/trees/${fakeSha(`tree:${sha}`)}` },
      },
      author: userJson(owner),
      committer: userJson(owner),
      parents: [],
    };
  }

  /**
   * GET branches/{branch} (`branch-with-protection`): `protected` when classic protection or a
   * ruleset applies; `protection` shows classic protection's required checks only.
   */
  function branchWithProtectionJson(name: string, sha: string): Record<string, unknown> {
    const req = requiredChecks.get(name);
    const contexts = req?.protection;
    const url = `${repoApi}/branches/${encodeURIComponent(name)}`;
    return {
      name,
      commit: commitJson(sha),
      _links: { self: url, html: `${repoHtml}/tree/${name}` },
      protected: contexts !== undefined || req?.ruleset !== undefined,
      protection: {
        enabled: contexts !== undefined,
        required_status_checks: {
          enforcement_level: contexts !== undefined && contexts.length > 0 ? 'non_admins' : 'off',
          contexts: contexts ?? [],
          checks: (contexts ?? []).map((context) => ({ context, app_id: null })),
        },
      },
      protection_url: `${url}/protection`,
    };
  }

  function appJson(): Record<string, unknown> {
    return {
      id: appId,
      slug: appSlug,
      node_id: `A_fake${appId}`,
      name: appSlug,
      owner: userJson(owner),
      description: 'fake app',
      external_url: 'https://example.test',
      html_url: `https://github.com/apps/${appSlug}`,
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-01T00:00:00Z',
      permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', metadata: 'read' },
      events: ['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'installation'],
    };
  }

  function installationJson(): Record<string, unknown> {
    return {
      id: installationId,
      account: userJson(owner),
      app_id: appId,
      app_slug: appSlug,
      target_id: fakeUserId(owner),
      target_type: 'User',
      repository_selection: 'all',
      access_tokens_url: `${API}/app/installations/${installationId}/access_tokens`,
      repositories_url: `${API}/installation/repositories`,
      html_url: `https://github.com/settings/installations/${installationId}`,
      permissions: { contents: 'write', issues: 'write', pull_requests: 'write', checks: 'write', statuses: 'read', actions: 'read', metadata: 'read' },
      events: ['issues', 'issue_comment', 'pull_request', 'pull_request_review', 'push', 'check_run', 'status'],
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-01T00:00:00Z',
      single_file_name: null,
      suspended_at: null,
      suspended_by: null,
    };
  }

  return {
    labelJson,
    repoJson,
    issueJson,
    commentJson,
    branchJson,
    pullJson,
    reviewJson,
    reviewCommentJson,
    checkRunJson,
    checkSuiteJson,
    appJson,
    otherAppJson,
    minimalRepoJson,
    statusJson,
    branchWithProtectionJson,
    installationJson,
  };
}

export type Shapes = ReturnType<typeof createShapes>;
