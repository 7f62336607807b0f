import { pino, type Logger } from 'pino';

/** Structured logs on stderr (stdout stays free for `--json`). */
export function createLogger(level = process.env.LOG_LEVEL ?? 'warn'): Logger {
  return pino({ name: 'goal-loop', level }, pino.destination(2));
}
