import { createHash } from 'node:crypto';
import { fakeUserId } from '../webhook-payloads.js';
import { API, type FaultFilter, type FaultKind, type Permission, type UserType } from './types.js';

export type Reply = [number, string | Buffer | Record<string, unknown> | unknown[]] | [number, string | Buffer | Record<string, unknown> | unknown[], Record<string, string>] | [number];

export interface Fault {
  remaining: number;
  kind: FaultKind;
  filter: FaultFilter | undefined;
}

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;
export const REACTIONS = new Set(['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'rocket', 'eyes']);

export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function fakeSha(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}

export function userType(login: string): UserType {
  return login.endsWith('[bot]') ? 'Bot' : 'User';
}

export function userJson(login: string): Record<string, unknown> {
  const id = fakeUserId(login);
  const type = userType(login);
  return {
    login,
    id,
    node_id: `${type === 'Bot' ? 'BOT' : 'U'}_fake${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: '',
    url: `${API}/users/${encodeURIComponent(login)}`,
    followers_url: `${API}/users/${encodeURIComponent(login)}/followers`,
    following_url: `${API}/users/${encodeURIComponent(login)}/following{/other_user}`,
    gists_url: `${API}/users/${encodeURIComponent(login)}/gists{/gist_id}`,
    starred_url: `${API}/users/${encodeURIComponent(login)}/starred{/owner}{/repo}`,
    subscriptions_url: `${API}/users/${encodeURIComponent(login)}/subscriptions`,
    organizations_url: `${API}/users/${encodeURIComponent(login)}/orgs`,
    repos_url: `${API}/users/${encodeURIComponent(login)}/repos`,
    events_url: `${API}/users/${encodeURIComponent(login)}/events{/privacy}`,
    received_events_url: `${API}/users/${encodeURIComponent(login)}/received_events`,
    html_url: type === 'Bot' ? `https://github.com/apps/${login.replace(/\[bot\]$/, '')}` : `https://github.com/${login}`,
    type,
    site_admin: false,
  };
}

export function errorBody(message: string, status: number): Record<string, unknown> {
  return { message, documentation_url: 'https://docs.github.com/rest', status: String(status) };
}

export function parseBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  if (body === '') return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

export function obj(body: unknown): Record<string, unknown> {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export const ROLE: Record<Permission, { permission: string; role: string; perms: Record<string, boolean> }> = {
  admin: { permission: 'admin', role: 'admin', perms: { admin: true, maintain: true, push: true, triage: true, pull: true } },
  maintain: { permission: 'write', role: 'maintain', perms: { admin: false, maintain: true, push: true, triage: true, pull: true } },
  write: { permission: 'write', role: 'write', perms: { admin: false, maintain: false, push: true, triage: true, pull: true } },
  triage: { permission: 'read', role: 'triage', perms: { admin: false, maintain: false, push: false, triage: true, pull: true } },
  read: { permission: 'read', role: 'read', perms: { admin: false, maintain: false, push: false, triage: false, pull: true } },
  none: { permission: 'none', role: 'none', perms: { admin: false, maintain: false, push: false, triage: false, pull: false } },
};

/** The query text of a GraphQL request's body. */
export function graphqlQuery(body: unknown): string {
  return str(obj(body).query) ?? '';
}

/** The first field a GraphQL operation selects (`markPullRequestReadyForReview`), or `?`. */
export function graphqlOperation(body: unknown): string {
  const q = graphqlQuery(body);
  const fields = [...q.slice(q.indexOf('{') + 1).matchAll(/(?:^|[{\s,])(?:\w+\s*:\s*)?(\w+)\s*\(/g)].map((m) => m[1]!);
  return fields.length > 0 ? [...new Set(fields)].join('+') : '?';
}
