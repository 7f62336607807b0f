import { pino, type Logger } from 'pino';
import { redactUrls } from '../workspace/remote-auth.js';

/** Structured logs on stderr (stdout stays free for `--json`), with credentials in URLs masked. */
export function createLogger(level = process.env.LOG_LEVEL ?? 'warn'): Logger {
  return pino({ name: 'goal-loop', level, hooks: { streamWrite: redactUrls } }, pino.destination(2));
}
