import type { GoalSpec } from '../goal/schema.js';

/**
 * One warning line when `--approve` names ids the spec has no task for (a typo would otherwise
 * leave the task waiting with no word why), or undefined. `all` is always valid.
 */
export function unknownApprovalsWarning(spec: GoalSpec, approve: readonly string[] | undefined): string | undefined {
  const ids = spec.tasks.map((t) => t.id);
  const unknown = (approve ?? []).filter((id) => id !== 'all' && !ids.includes(id));
  if (unknown.length === 0) return undefined;
  const short = (id: string) => (id.length > 40 ? `${id.slice(0, 40)}…` : id);
  const known = ids.length > 20 ? `${ids.slice(0, 20).map(short).join(', ')}, …` : ids.map(short).join(', ');
  return `goal-loop: warning: --approve names unknown task${unknown.length > 1 ? 's' : ''} ${unknown.map((id) => `"${short(id)}"`).join(', ')} (the spec's tasks: ${known})`;
}
