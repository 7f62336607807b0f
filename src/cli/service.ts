import { type Logger, pino } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import { openStore, type Store } from '../ledger/open-ledger.js';
import type { Sandbox } from '../ports/sandbox.js';
import { sandboxForConfig } from '../run/compose-goal-run.js';
import { workspaceRoot } from '../run/paths.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';

/**
 * Whether the bubblewrap jail works on this host, for the start line: `bwrap usable`, or
 * `bwrap unusable: <why>` (goals whose repo config asks for `sandbox: bwrap`, the default, are then refused).
 */
export async function jailStatus(): Promise<string> {
  try {
    await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) });
    return 'bwrap usable';
  } catch (err) {
    const reason = ((err as Error).message.split('\n')[0] ?? '').replace(/^cannot run untrusted commands: /, '');
    return `bwrap unusable: ${reason}`;
  }
}

/** Resolves on the first SIGTERM or SIGINT; keeps the process alive until then. */
export function untilSignal(): Promise<void> {
  // The worker pool's timers do not hold the process open (so embedding it never blocks an exit).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  return new Promise<void>((resolve) => {
    const stop = () => {
      clearInterval(keepAlive);
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

/** What a service started on a store gives back: its log and an orderly close. */
export interface RunningService {
  log: Logger;
  close(): Promise<void>;
}

/**
 * Opens the store the environment names, starts a service on it, runs until SIGTERM/SIGINT,
 * then closes the service and the store. Returns the exit code.
 */
export async function runService(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  start: (common: { store: Store; workspaceRoot: string; sandboxFor: (config: RepoConfig) => Promise<Sandbox>; env: NodeJS.ProcessEnv }) => Promise<RunningService>,
  shutdownMessage: string,
): Promise<number> {
  // Listening before the start: a stop sent as soon as the start line shows closes in order, not by the default action.
  const stopped = untilSignal();
  // A service answers webhooks and claims jobs as they come: no checkpoint's disk sync on its event loop.
  const store = await openStore(env, { checkpoints: 'background' });
  try {
    const running = await start({ store, workspaceRoot: workspaceRoot(env), sandboxFor: sandboxForConfig(logger), env });
    await stopped;
    running.log.info(shutdownMessage);
    await running.close();
    return 0;
  } finally {
    await store.close();
  }
}
