import { existsSync } from 'node:fs';
import { redactUrls } from '../../common/redact-urls.js';
import { readCoreMeta } from '../../goal/meta.js';
import { openStore, resolveDbPath } from '../../ledger/open-ledger.js';
import { MAX_EFFECT_TRIES } from '../../loop/outbox.js';
import type { GoalRecord } from '../../ports/goal-ledger.js';
import type { PendingEffect } from '../../ports/outbox.js';
import { workspaceRoot } from '../../run/paths.js';
import { readGitHubGoal } from '../../steering/issue-goal.js';
import { goalLeaseName } from '../../worker/lease.js';
import { diskLine } from '../../workspace/workspace-disk.js';

export async function statusCommand(values: { json?: boolean }): Promise<number> {
  if (!process.env.DATABASE_URL) {
    // Looking must not create: no file means no goals (and no empty `.goal-loop/` left behind).
    const { path, notice } = resolveDbPath();
    if (!existsSync(path)) {
      if (notice) process.stderr.write(`${notice}\n`);
      process.stdout.write(values.json ? '[]\n' : `no goals in the ledger yet (${path} does not exist; GOAL_LOOP_DB or DATABASE_URL name another)\n`);
      if (!values.json) await writeDiskLine();
      return 0;
    }
  }
  const store = await openStore();
  const { ledger } = store;
  try {
    const [goals, leases, queued, effects, givenUp] = await Promise.all([ledger.listGoals(), ledger.listLeases(), store.queue.listQueued(), ledger.pendingEffects(), ledger.givenUpEffects()]);
    const now = Date.now();
    const ageS = (at: string) => Math.max(0, Math.round((now - Date.parse(at)) / 1000));
    const rows = await Promise.all(
      goals.map(async (g) => {
        const tasks = await ledger.listTasks(g);
        const lease = leases.find((l) => l.name === goalLeaseName(g) && l.live);
        const job = queued.find((j) => j.key.repo === g.repo && j.key.goalId === g.goalId);
        return {
          goal_id: g.goalId,
          // A ledger written before credentials were split off the URL may still hold them.
          repo: redactUrls(g.repo),
          state: g.state,
          branch: g.branch,
          priority: g.priority,
          tasks_completed: tasks.filter((t) => t.status === 'done' || t.status === 'skipped').length,
          tasks_total: tasks.length,
          iterations: g.counters.iterations,
          tokens: g.counters.tokens,
          cost_usd: g.counters.cost_usd,
          cost_cap_usd: capOf(g),
          stop_reason: g.stopReason && redactUrls(g.stopReason),
          updated_at: g.updatedAt,
          queued: job ? { mode: job.mode, since: job.enqueuedAt, not_before: job.notBefore } : null,
          leased: lease ? { worker: lease.holder, heartbeat_age_s: Math.max(0, Math.round((now - Date.parse(lease.heartbeatAt)) / 100) / 10) } : null,
          on_github: readGitHubGoal(g.meta) !== undefined,
          pending_effects: pendingOf(
            effects.filter((e) => e.key.repo === g.repo && e.key.goalId === g.goalId),
            ageS,
          ),
          given_up_effects: givenUp
            .filter((e) => e.key.repo === g.repo && e.key.goalId === g.goalId)
            .map((e) => ({ kind: e.kind, tries: e.attempts, given_up_at: e.givenUpAt, error: e.lastError && redactUrls(e.lastError) })),
        };
      }),
    );
    if (values.json) {
      process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      process.stdout.write('no goals in the ledger yet\n');
      await writeDiskLine();
      return 0;
    }
    const all = pendingOf(effects, ageS);
    if (all) process.stdout.write(`${all.count} effect${all.count === 1 ? '' : 's'} pending, the oldest ${all.oldest_age_s}s old (see each goal)\n\n`);
    if (givenUp.length > 0) process.stdout.write(`${givenUp.length} effect${givenUp.length === 1 ? '' : 's'} given up after ${MAX_EFFECT_TRIES} tries (see each goal)\n\n`);
    for (const r of rows) {
      const work = r.leased
        ? `leased by ${r.leased.worker} (heartbeat ${r.leased.heartbeat_age_s}s ago)`
        : r.queued
          ? `queued (${r.queued.mode}) since ${r.queued.since}${r.queued.not_before ? `, not before ${r.queued.not_before}` : ''}`
          : 'idle';
      const budget = `$${r.cost_usd.toFixed(2)}${r.cost_cap_usd !== undefined ? ` of $${r.cost_cap_usd.toFixed(2)}` : ''}`;
      process.stdout.write(
        `${r.goal_id}  ${r.state}  ${r.tasks_completed}/${r.tasks_total} tasks  ${r.iterations} iterations  ${budget}  ${r.updated_at}\n` +
          `  ${r.repo}  ${r.branch}  ${work}${r.stop_reason ? `\n  ${r.stop_reason}` : ''}` +
          (r.pending_effects ? `\n  ${describePending(r.pending_effects, r.on_github)}` : '') +
          r.given_up_effects.map((e) => `\n  given up: ${e.kind} at ${e.given_up_at}${e.error ? `; ${oneLine(e.error)}` : ''}`).join('') +
          '\n',
      );
    }
    process.stdout.write('\n');
    await writeDiskLine();
    process.stdout.write('what each attempt did: goal-loop logs <goal-id> [--follow]\n');
    return 0;
  } finally {
    await store.close();
  }
}

/** What the workspaces and caches hold on disk (`goal-loop clean` frees it), when there are any. */
async function writeDiskLine(): Promise<void> {
  const line = await diskLine(workspaceRoot()).catch(() => undefined);
  if (line) process.stdout.write(`${line}; goal-loop clean frees it\n`);
}

interface Pending {
  count: number;
  kinds: string[];
  oldest_age_s: number;
  tries: number;
  last_error: string | null;
}

/** What is pending in the outbox (oldest first), or null when nothing is. */
function pendingOf(effects: PendingEffect[], ageS: (at: string) => number): Pending | null {
  const oldest = effects[0];
  if (!oldest) return null;
  const failing = effects.find((e) => e.lastError);
  return { count: effects.length, kinds: [...new Set(effects.map((e) => e.kind))], oldest_age_s: ageS(oldest.createdAt), tries: oldest.attempts, last_error: failing?.lastError ?? null };
}

/** A GitHub goal's effects are performed by a worker; a local goal's by its next `goal-loop run`. */
function describePending(p: Pending, onGitHub: boolean): string {
  const tries = p.tries ? `, tried ${p.tries} time${p.tries === 1 ? '' : 's'}` : '';
  const error = p.last_error ? `; last error: ${oneLine(redactUrls(p.last_error))}` : '';
  return `${onGitHub ? 'pending on GitHub' : 'pending report'}: ${p.kinds.join(', ')} (${p.count}, oldest ${p.oldest_age_s}s${tries})${error}${onGitHub ? '' : '; the next `goal-loop run` of this goal makes it'}`;
}

const oneLine = (text: string): string => text.split('\n')[0]!.slice(0, 200);

/** The cost cap the goal runs under, when one is known from its spec or a `/goal budget`. */
function capOf(g: GoalRecord): number | undefined {
  return readCoreMeta(g.meta).budgetUsd ?? g.spec.limits?.cost_cap_usd;
}
