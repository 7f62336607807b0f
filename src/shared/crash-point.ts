/**
 * Crash tests: with GOAL_LOOP_CRASH_AT=<name>, the process kills itself with SIGKILL when it
 * reaches that point, to prove that a crash exactly there loses nothing and repeats nothing.
 * Names: `checkpoint-committed` (a task's commit exists locally but is not pushed).
 */
export function crashPoint(name: string): void {
  if (process.env.GOAL_LOOP_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
