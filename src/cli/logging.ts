import { type DestinationStream, type LogFn, type Logger, pino } from 'pino';
import { redactUrls } from '../common/redact-urls.js';

/**
 * The longest log line written as it is. A longer one can only be carrying someone's data (a
 * delivery's body, a command's output): it is replaced by a line that says so, with its head.
 */
export const MAX_LOG_LINE_CHARS = 64 * 1024;

/** Structured logs on stderr (stdout stays free for `--json`), with credentials in URLs masked. */
export function createLogger(level = process.env.LOG_LEVEL ?? 'warn', destination: DestinationStream = pino.destination(2)): Logger {
  return pino({ name: 'goal-loop', level, hooks: { streamWrite: boundedLogLine, logMethod: withoutBoundKeys } }, destination);
}

/**
 * A log call's fields without those its logger already binds: pino would write both
 * (`"goal":"x","goal":"x"`). The binding wins, as in `childLogger`.
 */
function withoutBoundKeys(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first] = args;
  if (first !== null && typeof first === 'object' && !(first instanceof Error)) {
    const bound = this.bindings();
    if (Object.keys(first).some((k) => k in bound)) args[0] = Object.fromEntries(Object.entries(first).filter(([k]) => !(k in bound)));
  }
  method.apply(this, args);
}

/** A pino line with credentials in URLs masked, and no longer than MAX_LOG_LINE_CHARS and a little. */
export function boundedLogLine(line: string): string {
  if (line.length <= MAX_LOG_LINE_CHARS) return redactUrls(line);
  // Cut where a URL would end, so that no userinfo loses the '@' or host that marks it as one.
  let cut = MAX_LOG_LINE_CHARS;
  while (cut > 0 && !URL_END.test(line[cut - 1]!)) cut--;
  const level = /^\{"level":(\d{1,3}),/.exec(line.slice(0, 20))?.[1];
  const replacement = {
    level: level ? Number(level) : 50,
    time: Date.now(),
    name: 'goal-loop',
    msg: `a log line of ${line.length} characters, cut to its first ${cut}`,
    head: redactUrls(line.slice(0, cut)),
  };
  return `${JSON.stringify(replacement)}\n`;
}

const URL_END = /[\s/"<>]/;
