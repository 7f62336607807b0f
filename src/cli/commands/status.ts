import { parseArgs } from 'node:util';
import { openLedger } from '../../ledger/open-ledger.js';

export const STATUS_USAGE = `goal-loop status [--json]

  Lists the goals in the ledger (GOAL_LOOP_DB) with their state, progress and budget.`;

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean', default: false } }, strict: true, allowPositionals: false });
  const ledger = openLedger();
  try {
    const goals = await ledger.listGoals();
    const rows = await Promise.all(
      goals.map(async (g) => {
        const tasks = await ledger.listTasks(g);
        return {
          goal_id: g.goalId,
          repo: g.repo,
          state: g.state,
          branch: g.branch,
          priority: g.priority,
          tasks_completed: tasks.filter((t) => t.status === 'done' || t.status === 'skipped').length,
          tasks_total: tasks.length,
          iterations: g.counters.iterations,
          tokens: g.counters.tokens,
          cost_usd: g.counters.cost_usd,
          stop_reason: g.stopReason,
          updated_at: g.updatedAt,
        };
      }),
    );
    if (values.json) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      process.stdout.write('no goals in the ledger yet\n');
      return 0;
    }
    for (const r of rows) {
      process.stdout.write(
        `${r.goal_id}  ${r.state}  ${r.tasks_completed}/${r.tasks_total} tasks  ${r.iterations} iterations  $${r.cost_usd.toFixed(2)}  ${r.updated_at}\n` +
          `  ${r.repo}  ${r.branch}${r.stop_reason ? `\n  ${r.stop_reason}` : ''}\n`,
      );
    }
    return 0;
  } finally {
    await ledger.close();
  }
}
