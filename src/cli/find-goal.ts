import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { InputError } from '../common/errors.js';
import { redactUrls } from '../common/redact-urls.js';
import { resolveDbPath } from '../ledger/open-ledger.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';

/** The goal with this id; --repo picks one when several repositories have it (a path or a URL, as run was given it). */
export async function findGoal(ledger: GoalLedger, goalId: string, repo: string | undefined): Promise<GoalKey> {
  const matches = (await ledger.listGoals()).filter((g) => g.goalId === goalId);
  const chosen = repo === undefined ? matches : matches.filter((g) => g.repo === repo || g.repo === resolve(repo) || redactUrls(g.repo) === repo);
  if (chosen.length === 1) return { repo: chosen[0]!.repo, goalId };
  if (matches.length === 0) throw new InputError(`no goal "${goalId}" in the ledger (see \`goal-loop status\`)`);
  if (chosen.length === 0) throw new InputError(`no goal "${goalId}" on ${repo}; it is on: ${matches.map((g) => redactUrls(g.repo)).join(', ')}`);
  throw new InputError(`goal "${goalId}" is on several repositories; name one with --repo: ${chosen.map((g) => redactUrls(g.repo)).join(', ')}`);
}

/** A command about one goal, with no ledger yet: says so (opening it would create an empty one). */
export function requireLedger(goalId: string): void {
  if (process.env.DATABASE_URL) return;
  const { path } = resolveDbPath();
  if (!existsSync(path)) throw new InputError(`no goal "${goalId}": the ledger ${path} does not exist yet (GOAL_LOOP_DB or DATABASE_URL name another)`);
}
