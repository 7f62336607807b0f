import type { EventBase, GoalEvent, PullRef, RepoRef } from '../../steering/events.js';

interface RepoPayload {
  repository?: EventBase['repository'];
  installation?: { id: number };
  sender?: { login?: string; type?: string };
}

/** Where a handler hands its event (the App's intake records it in the inbox). */
export type AcceptEvent = (event: GoalEvent) => Promise<void>;

/** Bots (including this app, and the workflow token's `github-actions[bot]`) never steer a goal. */
export function fromBot(payload: unknown): boolean {
  const sender = (payload as RepoPayload).sender;
  return sender?.type === 'Bot' || (sender?.login ?? '').endsWith('[bot]');
}

/**
 * The repository, installation and sender of a webhook payload. `installationId`: for a payload
 * without an installation (a GitHub Action's event): the App's events always carry one.
 */
export function eventBase(deliveryId: string, payload: unknown, installationId?: number): EventBase | undefined {
  const p = payload as RepoPayload;
  const installation = p.installation?.id ?? installationId;
  if (installation === undefined || !p.repository || !p.sender?.login) return undefined;
  return {
    deliveryId,
    installationId: installation,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    sender: p.sender.login,
    repository: {
      name: p.repository.name,
      owner: { login: p.repository.owner.login },
      clone_url: p.repository.clone_url,
      html_url: p.repository.html_url,
      default_branch: p.repository.default_branch,
    },
  };
}

type RepoPayloadRef = { id: number; full_name: string } | null | undefined;

const repoRef = (r: RepoPayloadRef): RepoRef | null => (r && typeof r.id === 'number' && typeof r.full_name === 'string' ? { id: r.id, fullName: r.full_name } : null);

/** The pull request a `pull_request*` event is about, and the repositories of its head and base, as the payload says. */
export function pullRef(payload: unknown): PullRef | undefined {
  const p = payload as { repository?: RepoPayloadRef; pull_request?: { number: number; head: { ref: string; repo: RepoPayloadRef } } };
  const baseRepo = repoRef(p.repository);
  const pr = p.pull_request;
  if (!pr || !baseRepo) return undefined;
  return { prNumber: pr.number, headRef: pr.head.ref, headRepo: repoRef(pr.head.repo), baseRepo };
}
