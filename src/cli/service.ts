import type { Logger } from 'pino';
import type { RepoConfig } from '../config/repo-config.js';
import type { Sandbox } from '../ports/sandbox.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';

/** The sandbox a repository's config asks for (refused with a fix when the host cannot give it). */
export function sandboxForConfig(logger: Logger): (config: RepoConfig) => Promise<Sandbox> {
  return (config) => selectSandbox({ mode: config.sandbox, logger });
}

/** Resolves on the first SIGTERM or SIGINT. */
export function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
