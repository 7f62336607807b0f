/** How long a step took, as people read it: ms, then seconds, then minutes. */
export function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

/** How a command ended: its exit code, or that it was killed or timed out. */
export function exitText(exitCode: number | null, timedOut: boolean, stalled = false): string {
  return stalled ? 'stalled' : timedOut ? 'timed out' : exitCode === null ? 'killed' : `exit ${exitCode}`;
}
