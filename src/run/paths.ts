import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { InputError } from '../common/errors.js';
import { type RemoteWithAuth, splitRemoteCredentials } from '../workspace/remote-auth.js';

/** Root of the private clones: `GOAL_LOOP_WORKSPACES`, else the user's cache directory. */
export function workspaceRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.GOAL_LOOP_WORKSPACES) return resolve(env.GOAL_LOOP_WORKSPACES);
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'goal-loop', 'workspaces');
}

/** One folder per repository (readable name + hash of its location), one clone per goal inside. */
export function workspaceDir(root: string, repo: string, goalId: string): string {
  const name = basename(repo.replace(/\.git\/?$/, '').replace(/\/+$/, '')).replace(/[^A-Za-z0-9._-]/g, '_') || 'repo';
  const hash = createHash('sha256').update(repo).digest('hex').slice(0, 10);
  return join(root, `${name}-${hash}`, goalId);
}

/** A URL stays as given; a path becomes absolute so the ledger key is stable. */
export function normalizeRepo(repo: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/]+@[^:]+:/.test(repo) ? repo : resolve(repo);
}

/**
 * A `--repo` argument (or MCP `repo`): normalized, with credentials in an http(s) URL split off.
 * Only `repo` is ever stored, shown or used to name a workspace; `auth` goes to the git
 * processes that talk to the remote.
 */
export function repoArgument(arg: string): { repo: string; auth: RemoteWithAuth['auth'] } {
  refuseUnsplittableSecrets(arg);
  const { url, auth } = splitRemoteCredentials(normalizeRepo(arg));
  // Our own argv still holds the secret, and /proc/<pid>/cmdline shows it to anyone: overwrite it.
  if (auth.remoteConfig && process.argv.some((a) => a.includes(arg))) process.title = `goal-loop ${process.argv[2] ?? ''}`.trim();
  return { repo: url, auth };
}

/**
 * Secrets the split cannot take out of a URL, which would otherwise be stored and shown: a
 * query or fragment (`?token=…`), and a password in a URL that is not http(s).
 */
function refuseUnsplittableSecrets(arg: string): void {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(arg)?.[1]?.toLowerCase();
  if (!scheme) return;
  const authority = arg.slice(scheme.length + 3).split('/')[0] ?? '';
  if (/^https?$/.test(scheme) && /[?#]/.test(arg)) {
    throw new InputError('--repo: a URL with a query or fragment is refused (it would be stored as it is); give credentials as https://user:token@host/…, or through a git credential helper');
  }
  if (!/^https?$/.test(scheme) && /:[^@]*@/.test(authority)) {
    throw new InputError(`--repo: a password in a ${scheme}:// URL is refused (only http(s) credentials are kept out of storage); use ssh keys or an https URL`);
  }
}
