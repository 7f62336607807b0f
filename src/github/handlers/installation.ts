import type { Context } from 'probot';

/** installation.*: nothing to set up; logged so operators see who installed the app. */
export function onInstallation() {
  return async (context: Context<'installation'>): Promise<void> => {
    const { action, installation } = context.payload;
    const account = installation.account as { login?: string; slug?: string } | null;
    context.log.info({ action, installation: installation.id, account: account?.login ?? account?.slug }, 'installation event');
  };
}
