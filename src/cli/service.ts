import type { Logger } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import type { Sandbox } from '../ports/sandbox.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';

/** The sandbox a repository's config asks for (refused with a fix when the host cannot give it). */
export function sandboxForConfig(logger: Logger): (config: RepoConfig) => Promise<Sandbox> {
  return (config) => selectSandbox({ mode: config.sandbox, logger });
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
