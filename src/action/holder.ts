import type { Logger } from 'pino';
import type { Octokit } from '../github/github-forge.js';
import type { CarriedState } from './carried-state.js';

/** How a run that finds its goal held waits for the holder to end, before it refuses. */
export interface HolderWait {
  pollMs: number;
  maxWaitMs: number;
}

export const DEFAULT_HOLDER_WAIT: HolderWait = { pollMs: 20_000, maxWaitMs: 5 * 60_000 };

/**
 * Whether another run still works the goal: the run the carried state names (not this one, nor an
 * earlier attempt of it: a re-run starts after its attempt ended) and GitHub says is not completed.
 * A run GitHub does not know (deleted), or one this token may not see (no `actions: read`), is taken
 * as ended: the workflow's `concurrency:` group is the first guard, this the second.
 */
export async function holderAlive(o: Octokit, where: { owner: string; repo: string }, holder: CarriedState['runner'], self: { runId: string }, log: Logger): Promise<boolean> {
  if (!holder || holder.runId === self.runId) return false;
  const runId = Number(holder.runId);
  if (!Number.isSafeInteger(runId) || runId <= 0) return false;
  try {
    const { data } = await o.rest.actions.getWorkflowRun({ owner: where.owner, repo: where.repo, run_id: runId });
    return data.status !== 'completed';
  } catch (err) {
    const status = (err as { status?: number }).status;
    // A rate limit says nothing about the run: it is an error, not an ended run.
    if ((status !== 404 && status !== 403) || /rate limit/i.test((err as Error).message ?? '')) throw err;
    if (status === 403) log.warn({ run: runId }, 'cannot see whether the run that held this goal has ended (the token lacks actions: read); going on');
    return false;
  }
}

/** Waits while the holder works (polling), up to the wait's bound; true when it still does then. */
export async function waitForHolder(alive: () => Promise<boolean>, wait: HolderWait, log: Logger): Promise<boolean> {
  const until = Date.now() + wait.maxWaitMs;
  while (await alive()) {
    if (Date.now() >= until) return true;
    log.info({ retryInMs: wait.pollMs }, 'another run works this goal; waiting for it to end');
    await new Promise((r) => setTimeout(r, wait.pollMs));
  }
  return false;
}
