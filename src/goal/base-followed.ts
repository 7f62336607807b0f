/** What following the base branch did, as people are told (status checklist, PR timeline, terminal). */
export interface BaseFollowedReport {
  mode: 'rebase' | 'merge';
  /** The base branch's tip the goal branch is on now. */
  onto: string;
  /** Checkpoints carried onto it, and how many of their verifications passed again on the new tree. */
  replayed: number;
  reverified: number;
  /** Tasks to do again: the one whose change no longer applies, those whose verification now fails, those dropped after a conflict. */
  repairs: Array<{ taskId: string; why: 'conflict' | 'verification' | 'dropped' }>;
  note?: string;
}

/** One line for people: "rebased onto 1a2b3c4: 3 checkpoints replayed, 3 re-verified". */
export function describeBaseFollowed(r: BaseFollowedReport): string {
  const verb = r.mode === 'merge' ? 'merged' : 'rebased onto';
  const parts = [`${r.replayed} checkpoint${r.replayed === 1 ? '' : 's'} ${r.mode === 'merge' ? 'kept' : 'replayed'}`, `${r.reverified} re-verified`];
  const said = { conflict: 'to repair (conflict)', verification: 'to repair (verification fails on the new base)', dropped: 'to do again' } as const;
  for (const why of ['conflict', 'verification', 'dropped'] as const) {
    const ids = r.repairs.filter((x) => x.why === why).map((x) => x.taskId);
    if (ids.length > 0) parts.push(`${ids.join(', ')} ${said[why]}`);
  }
  return `${verb} ${r.mode === 'merge' ? `the base branch (${r.onto.slice(0, 7)})` : r.onto.slice(0, 7)}: ${parts.join(', ')}${r.note ? ` (${r.note})` : ''}`;
}
