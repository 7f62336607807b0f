import type { GoalSnapshot } from '../../goal/result.js';
import { logsHint, type RenderContext } from './attempt-markdown.js';
import { fitLines } from './fit.js';
import { code, commitLink } from './inert.js';
import { type AttemptView, lastCheckpoint, statPaths } from './record.js';

const PATHS_SHOWN = 3;
/** Room the changes list may take in a PR body, in UTF-8 bytes (GitHub's limit is 65,536 bytes). */
const CHANGES_MAX = 40_000;

/** A line per done task: its checkpoint commit (linked) and what it changed, from the diffstat in the record. */
export function renderChanges(s: GoalSnapshot, views: readonly AttemptView[], ctx: RenderContext): string {
  const lines = s.tasks
    .filter((t) => t.status === 'done')
    .map((t) => {
      const cp = lastCheckpoint(views, t.id, t.checkpointSha);
      const sha = t.checkpointSha ?? cp?.sha;
      const commit = sha ? ` (${commitLink(sha, ctx.repoUrl)})` : '';
      if (!cp) return `- \`${t.id}\`${commit}`;
      const paths = statPaths(cp.stat);
      const shown = paths.slice(0, PATHS_SHOWN).map((p) => code(p, 100));
      const more = paths.length > PATHS_SHOWN ? ` and ${paths.length - PATHS_SHOWN} more` : '';
      return `- \`${t.id}\`${commit}: ${cp.files} file(s), +${cp.insertions} -${cp.deletions}${shown.length > 0 ? ` — ${shown.join(', ')}${more}` : ''}`;
    });
  if (lines.length === 0) return '';
  return ['### Changes per task', '', ...fitLines(lines, CHANGES_MAX, (n) => `- … ${n} more task(s): ${logsHint(ctx.goalId)}`)].join('\n');
}
