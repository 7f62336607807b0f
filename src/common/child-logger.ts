import type { Logger } from 'pino';

/**
 * `logger.child(bindings)` without the keys the logger already binds: pino writes a key once per
 * binding, so a goal's logger handed to the loop (which binds `goal` too) would print
 * `"goal":"x","goal":"x"`. The outer binding wins; it is the more specific one (`repo#goal`).
 */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  const bound = logger.bindings();
  const added = Object.fromEntries(Object.entries(bindings).filter(([k]) => !(k in bound)));
  return logger.child(added);
}
