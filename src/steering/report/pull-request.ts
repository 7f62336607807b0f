import type { GoalSnapshot } from '../../goal/result.js';
import { logsHint, type RenderContext } from './attempt-markdown.js';
import { evidenceLegend, evidenceMarkdown } from './evidence.js';
import { fitLines } from './fit.js';
import { code, commitLink } from './inert.js';
import { type AttemptView, lastCheckpoint, statPaths, taskProof } from './record.js';

const PATHS_SHOWN = 3;
/** Room the changes list may take in a PR body, in UTF-8 bytes (GitHub's limit is 65,536 bytes). */
const CHANGES_MAX = 40_000;

/**
 * A line per done task: its checkpoint commit (linked), what its verification proves (its
 * evidence) and what it changed, from the diffstat in the record. Tasks whose verification passed
 * before they ran are counted in a warning above the list (a reviewer must look at them).
 */
export function renderChanges(s: GoalSnapshot, views: readonly AttemptView[], ctx: RenderContext): string {
  const done = s.tasks.filter((t) => t.status === 'done').map((t) => ({ t, proof: taskProof(views, t.id, t.checkpointSha) }));
  const lines = done.map(({ t, proof }) => {
    const cp = lastCheckpoint(views, t.id, t.checkpointSha);
    const sha = t.checkpointSha ?? cp?.sha;
    const commit = sha ? ` (${commitLink(sha, ctx.repoUrl)})` : '';
    const evidence = evidenceMarkdown(proof);
    const head = `- \`${t.id}\`${commit}${evidence ? ` · ${evidence}` : ''}`;
    if (!cp) return head;
    const paths = statPaths(cp.stat);
    const shown = paths.slice(0, PATHS_SHOWN).map((p) => code(p, 100));
    const more = paths.length > PATHS_SHOWN ? ` and ${paths.length - PATHS_SHOWN} more` : '';
    return `${head}${evidence ? ' ·' : ':'} ${cp.files} file(s), +${cp.insertions} -${cp.deletions}${shown.length > 0 ? ` — ${shown.join(', ')}${more}` : ''}`;
  });
  if (lines.length === 0) return '';
  const warned = done.filter((d) => d.proof.greenBefore).length;
  const warning =
    warned > 0
      ? [`> [!WARNING]\n> ${warned} task(s) marked ⚠ below: the verification passed before the task ran, so it cannot show that the task's change works. Review those changes by hand.`, '']
      : [];
  const legend = evidenceLegend(done.map((d) => d.proof.evidence));
  return ['### Changes per task', '', ...warning, ...fitLines(lines, CHANGES_MAX - 1_000, (n) => `- … ${n} more task(s): ${logsHint(ctx.goalId)}`), ...(legend ? ['', legend] : [])].join('\n');
}
