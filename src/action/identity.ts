import type { AppIdentity, Octokit, WriterIdentity } from '../github/github-forge.js';

/** The GitHub Actions app: the workflow token's writes are `github-actions[bot]`'s, performed via it. */
export const GITHUB_ACTIONS_APP: AppIdentity = { id: 15368, slug: 'github-actions' };

/**
 * Who goal-loop writes as in this run, so that only its own comments are read back as its state:
 * `bot_login` when given (`<slug>[bot]` for an App's installation token, a user's login for a
 * personal access token); else a personal access token names its user (`GET /user`), and an
 * installation token (the workflow's, which `GET /user` refuses) is the GitHub Actions app's.
 */
export async function actionIdentity(o: Octokit, botLogin: string | undefined, onGitHubCom = true): Promise<WriterIdentity> {
  // On GitHub Enterprise Server the Actions app has an id of its own: it is known by its bot's name there.
  const actions: AppIdentity = onGitHubCom ? GITHUB_ACTIONS_APP : { id: 0, slug: GITHUB_ACTIONS_APP.slug };
  const login = botLogin?.trim();
  if (login) {
    const app = /^(.+)\[bot\]$/.exec(login)?.[1];
    if (!app) return { user: login };
    return app === GITHUB_ACTIONS_APP.slug ? actions : { id: 0, slug: app };
  }
  try {
    const { data } = await o.rest.users.getAuthenticated();
    return data.type === 'Bot' ? { id: 0, slug: data.login.replace(/\[bot\]$/, '') } : { user: data.login };
  } catch (err) {
    if ((err as { status?: number }).status !== 403) throw err;
    return actions;
  }
}
