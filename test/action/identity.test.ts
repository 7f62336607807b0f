import { describe, expect, it } from 'vitest';
import { actionIdentity, GITHUB_ACTIONS_APP } from '../../src/action/identity.js';
import type { Octokit } from '../../src/github/github-forge.js';

/** An Octokit whose `GET /user` answers as GitHub does for the token kind. */
const octokitFor = (user: { status: 403 } | { login: string; type: 'User' | 'Bot' }) =>
  ({
    rest: {
      users: {
        getAuthenticated: async () => {
          if ('status' in user) throw Object.assign(new Error('Resource not accessible by integration'), { status: 403 });
          return { data: user };
        },
      },
    },
  }) as unknown as Octokit;

describe('who goal-loop writes as in an Action', () => {
  it('is the GitHub Actions app for the workflow token (GET /user refused), known by its bot name on GitHub Enterprise', async () => {
    expect(await actionIdentity(octokitFor({ status: 403 }), undefined)).toEqual(GITHUB_ACTIONS_APP);
    expect(await actionIdentity(octokitFor({ status: 403 }), undefined, false)).toEqual({ id: 0, slug: 'github-actions' });
  });

  it('is the user of a personal access token, and what bot_login names when given', async () => {
    expect(await actionIdentity(octokitFor({ login: 'machine-user', type: 'User' }), undefined)).toEqual({ user: 'machine-user' });
    expect(await actionIdentity(octokitFor({ status: 403 }), 'my-app[bot]')).toEqual({ id: 0, slug: 'my-app' });
    expect(await actionIdentity(octokitFor({ status: 403 }), 'someone')).toEqual({ user: 'someone' });
  });
});
