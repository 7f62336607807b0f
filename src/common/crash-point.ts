/**
 * Crash tests: with GOAL_LOOP_CRASH_AT=<name>, the process kills itself with SIGKILL when it
 * reaches that point, to prove that a crash exactly there loses nothing and repeats nothing.
 * Names (ARCHITECTURE.md, "Crash boundaries"): `checkpoint-committed` (a task's commit exists
 * locally, no step recorded it), `checkpoint-pushed` (pushed, the push effect not marked done), `effects-recorded:<kind>`
 * (a step and its outbox effects are written, none performed), `effect-performed:<kind>` (performed,
 * not yet marked done).
 */
export function crashPoint(name: string): void {
  if (process.env.GOAL_LOOP_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
