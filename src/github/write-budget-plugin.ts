import { setTimeout as delay } from 'node:timers/promises';
import { type TakeWriteOptions, takeWrite } from '../ports/take-write.js';
import { checkWriteLimits, type WriteBudgetStore, type WriteLimits, type WritePriority } from '../ports/write-budget.js';
import type { WriteRequestOptions } from './write-options.js';

/** The store and limits every installation client of this process takes its writes from. */
export interface WriteBudgetWiring {
  store: WriteBudgetStore;
  limits: WriteLimits;
  /** Passed to takeWrite (tests: a clock, a sleep). */
  take?: Omit<TakeWriteOptions, 'limits'>;
}

/** A secondary rate limit pauses every process's writes at least this long (GitHub's own advice). */
export const MIN_PAUSE_S = 60;

/** What a request hook sees of a request (Octokit's endpoint options). */
interface RequestOptions {
  method?: string;
  url?: string;
  query?: unknown;
  request?: Partial<WriteRequestOptions>;
}

interface HookableOctokit {
  hook: {
    before(name: 'request', hook: (options: RequestOptions) => Promise<void>): void;
  };
}

/** The installation each client of the plugin serves (the throttle's rate-limit callbacks get the client, not its options). */
const installations = new WeakMap<object, string>();

export const installationOf = (octokit: object): string | undefined => installations.get(octokit);

const STATUS_EDIT = /\/issues\/comments\/(\{comment_id\}|\d+)$/;

/**
 * The budget's priority of a request, or undefined when it is not a budgeted write: reads (GET,
 * HEAD, a GraphQL query) and the App's own endpoints (/app/…: the installation token). A caller
 * names the priority in `request.writePriority`; otherwise an edit of an issue comment (the status
 * comment) is background and every other write normal.
 */
export function writePriorityOf(options: RequestOptions): WritePriority | undefined {
  const method = (options.method ?? 'GET').toUpperCase();
  const url = options.url ?? '';
  if (method === 'GET' || method === 'HEAD' || url.startsWith('/app/') || url === '/app') return undefined;
  if (url === '/graphql' && !(typeof options.query === 'string' && /^\s*mutation\b/.test(options.query))) return undefined;
  if (options.request?.writePriority) return options.request.writePriority;
  return method === 'PATCH' && STATUS_EDIT.test(url) ? 'background' : 'normal';
}

/**
 * An Octokit plugin: an installation client takes a slot of its installation's budget before
 * each write. Clients without an installation (the App's JWT client) are not budgeted.
 */
export function writeBudgetPlugin(wiring: WriteBudgetWiring) {
  checkWriteLimits(wiring.limits); // a bad setting fails at start, not at the first write
  return (octokit: HookableOctokit, options: { auth?: unknown }): Record<string, never> => {
    const id = (options.auth as { installationId?: number | string } | undefined)?.installationId;
    if (id === undefined) return {};
    const installation = String(id);
    installations.set(octokit, installation);
    octokit.hook.before('request', async (request) => {
      const priority = writePriorityOf(request);
      if (!priority) return;
      const maxWaitMs = request.request?.writeMaxWaitMs;
      await takeWrite(wiring.store, installation, priority, { ...wiring.take, limits: wiring.limits, ...(maxWaitMs !== undefined ? { maxWaitMs } : {}) });
    });
    return {};
  };
}

/**
 * A secondary rate limit on `octokit`'s installation: pauses its writes in every process for
 * max(retry-after, 60) s, and, when this request will be retried, waits until the pause ends so
 * that the retry does not go out inside it. `baseMs` is milliseconds per second (tests shrink it).
 */
export async function pauseForSecondaryLimit(wiring: WriteBudgetWiring, octokit: object, retryAfterS: number, willRetry: boolean, baseMs: number): Promise<void> {
  const installation = installationOf(octokit);
  if (installation === undefined) return;
  const pauseS = Math.max(retryAfterS, MIN_PAUSE_S);
  await wiring.store.pauseWrites(installation, pauseS * baseMs);
  // The throttle retries after retry-after: the rest of the pause is waited here.
  if (willRetry && pauseS > retryAfterS) await delay((pauseS - retryAfterS) * baseMs);
}
