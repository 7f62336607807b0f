import { configLimits } from '../config/repo-config.js';
import type { Octokit } from '../github/github-forge.js';
import { loadRepoConfig } from '../github/repo-config-loader.js';
import { snapshotFromLedger } from '../github/work-goal.js';
import type { Store } from '../ledger/open-ledger.js';
import { readGitHubMeta } from '../steering/goal-meta.js';
import { checkAnnotations } from '../steering/report/check-run.js';
import { groupAttempts } from '../steering/report/record.js';
import type { ActionContext } from './context.js';
import { renderJobSummary } from './job-summary.js';
import type { ActionOutcome } from './run-action.js';
import { appendOutputs, appendSummary } from './runner-files.js';
import { annotationCommands, escapeData } from './workflow-commands.js';

/**
 * What a workflow user sees of a run: the job summary (the goal's checklist and attempts, from the
 * same record as the check run), the step's outputs (`goal_id`, `state`, `branch`, `pr_number`),
 * verification failures as annotations, and an error line when the run could not do its work.
 * `print`: a line on stdout, where the runner reads workflow commands.
 */
export async function reportAction(ctx: ActionContext, store: Store, outcome: ActionOutcome, print: (line: string) => void, o?: Octokit): Promise<void> {
  const goal = outcome.key ? await store.ledger.getGoal(outcome.key) : undefined;
  const g = goal ? readGitHubMeta(goal.meta) : undefined;
  const outputs: Record<string, string> = { goal_id: goal?.goalId ?? '', state: goal?.state ?? '', branch: goal?.branch ?? '', pr_number: g?.prNumber !== undefined ? String(g.prNumber) : '' };
  let summary = `## goal-loop\n\n${outcome.error ? `> [!CAUTION]\n> ${escapeMarkdownLine(outcome.error)}` : `> ${escapeMarkdownLine(outcome.note ?? 'nothing to do')}`}\n`;
  if (goal && g?.github && outcome.key) {
    const config = o ? await loadRepoConfig(o, ctx.owner, ctx.repo, ctx.inputs.configPath).catch(() => undefined) : undefined;
    const s = await snapshotFromLedger(store.ledger, outcome.key, g.github, config ? configLimits(config) : {});
    const views = groupAttempts(await store.ledger.listAttemptEntries(outcome.key));
    const note = outcome.error ?? outcome.note;
    summary = renderJobSummary(s, views, { repoUrl: ctx.htmlUrl, goalId: goal.goalId, ...(g.prUrl ? { prUrl: g.prUrl } : {}), ...(note ? { runNote: note } : {}) });
    for (const line of annotationCommands(checkAnnotations(s, views, `${ctx.tempDir}/work`))) print(line);
  }
  if (outcome.error) print(`::error title=goal-loop::${escapeData(outcome.error)}`);
  if (ctx.outputPath) await appendOutputs(ctx.outputPath, outputs);
  if (ctx.summaryPath) await appendSummary(ctx.summaryPath, summary);
}

/** One line of prose in the summary: no markdown or HTML of its own (it may quote an error). */
const escapeMarkdownLine = (text: string) => text.replace(/\s+/g, ' ').replace(/([\\`*_[\]<>|&#])/g, '\\$1');
