import type { RepoConfig } from '../../config/repo-config.js';
import type { GoalSpec } from '../../goal/schema.js';
import type { GoalState } from '../../goal/states.js';
import type { GoalMode } from '../../ports/queue.js';
import { type IssuePlan, TEMPLATE_COMMENT } from '../plan-from-issue.js';
import { inlineUntrusted } from '../report/status-comment.js';

/**
 * What one turn of a GitHub goal knows so far. The worker starts with the config, the mode and
 * the goal's meta, and fills in the rest as the decision asks for it (the issue's plan, the plan
 * a model wrote, the sandbox): each of those costs I/O, so it is fetched only when needed.
 */
export interface TurnFacts {
  mode: GoalMode;
  /** The goal's state when the turn began. */
  state: GoalState;
  /** `.github/goal-loop.yml` from the base branch, or what is wrong with it. */
  config: { ok: true; config: RepoConfig } | { ok: false; problems: string[] };
  /** The goal's meta when the turn began. */
  meta: { planApproved?: boolean | undefined; hasPlannedSpec: boolean; templatePosted?: boolean | undefined };
  /** A model is configured to write a plan for an issue without a ```goal block. */
  hasPlanner: boolean;
  /** The issue's plan (its ```goal block, or the plan a model wrote earlier), once read; `hasBlock`: the issue has a ```goal block. */
  issue?: { plan: IssuePlan; hasBlock: boolean };
  /** The plan the model wrote this turn, once asked for. */
  written?: { ok: true; plan: IssuePlan } | { ok: false; message: string };
  /** The valid spec is in the ledger. */
  specStored?: boolean;
  /** Whether the host gave a sandbox for the repository's commands, once asked for. */
  sandbox?: { ok: true } | { ok: false; message: string };
}

/** The next thing the worker does; `rest`, `status` and `run` end the turn. */
export type TurnStep =
  /** The goal comes to rest in `state` (with an optional comment on the issue); the status comment is refreshed. */
  | { kind: 'rest'; state: GoalState; reason: string; comment?: string; markTemplatePosted?: true }
  /** `/goal status` (or a control on a resting goal): settle a pending pause or stop, refresh the status comment. */
  | { kind: 'status'; config: RepoConfig }
  /** Read the issue's plan (as accepted, else from the issue); `announce`: post the status comment first (a new goal shows it at once). */
  | { kind: 'read-plan'; config: RepoConfig; announce: boolean }
  /** Ask the model for a plan (in a clone of the repository). */
  | { kind: 'write-plan'; config: RepoConfig }
  | { kind: 'store-spec'; spec: GoalSpec }
  | { kind: 'open-sandbox'; config: RepoConfig }
  /** Run the loop on the spec, then answer the reviews it addressed. */
  | { kind: 'run'; config: RepoConfig; spec: GoalSpec };

/** Decides the next step of a goal's turn from what is known; pure (the worker does the I/O). */
export function decideTurn(f: TurnFacts): TurnStep {
  if (!f.config.ok) {
    return rest(
      'STOPPED',
      'invalid .github/goal-loop.yml',
      `goal-loop cannot run: \`.github/goal-loop.yml\` is invalid.\n\n${f.config.problems.map((p) => `- ${p}`).join('\n')}\n\nFix the file and comment \`/goal start\`.`,
    );
  }
  const config = f.config.config;
  if (f.mode === 'status') return { kind: 'status', config };
  if (!f.issue) return { kind: 'read-plan', config, announce: f.state === 'INITIALIZING' };

  let plan = f.issue.plan;
  if (plan.kind === 'none' && f.hasPlanner) {
    if (!f.written) return { kind: 'write-plan', config };
    if (!f.written.ok) {
      return rest(
        'STOPPED',
        'the planner failed',
        `goal-loop could not write a plan for this issue:\n\n${inlineUntrusted(f.written.message, LINE_MAX)}\n\nAdd a \`\`\`goal block to the issue and comment \`/goal start\`.`,
      );
    }
    plan = f.written.plan;
  }
  if (plan.kind === 'none') {
    return { ...rest('STOPPED', 'the issue has no ```goal block', f.meta.templatePosted ? undefined : TEMPLATE_COMMENT), markTemplatePosted: true };
  }
  if (plan.kind === 'invalid') {
    return rest('STOPPED', 'invalid goal spec', `goal-loop cannot run the \`\`\`goal block of this issue:\n\n${bullets(plan.errors)}\n\nEdit the issue and comment \`/goal start\`.`);
  }
  const spec = plan.spec;
  if (!f.specStored) return { kind: 'store-spec', spec };

  const modelWritten = f.written?.ok === true;
  const fromModel = modelWritten || (f.meta.hasPlannedSpec && !f.issue.hasBlock);
  const approved = modelWritten ? false : f.meta.planApproved === true;
  if (f.mode === 'plan' || ((config.require_plan_approval || fromModel) && !approved)) {
    // `/goal plan` on a plan nobody has to approve shows it silently (the status comment has it).
    const silent = f.mode === 'plan' && !config.require_plan_approval && !fromModel && f.meta.planApproved !== false;
    const n = spec.tasks.length;
    return rest(
      'AWAITING_APPROVAL',
      'the plan waits for approval',
      silent
        ? undefined
        : `${fromModel ? 'Claude wrote a plan' : 'The plan'} (${n} task${n === 1 ? '' : 's'}) is in the status comment. A maintainer can start it with \`/goal approve\`, or edit the issue with a \`\`\`goal block.`,
    );
  }

  if (!f.sandbox) return { kind: 'open-sandbox', config };
  if (!f.sandbox.ok) {
    return rest('STOPPED', 'no sandbox on this host', `goal-loop will not run this repository's commands without a sandbox:\n\n\`\`\`text\n${f.sandbox.message}\n\`\`\``);
  }
  return { kind: 'run', config, spec };
}

function rest(state: GoalState, reason: string, comment: string | undefined): Extract<TurnStep, { kind: 'rest' }> {
  return { kind: 'rest', state, reason, ...(comment !== undefined ? { comment } : {}) };
}

/** Errors shown, and the room for each: a comment stays far within GitHub's 65,536 bytes. */
const LINES_MAX = 20;
const LINE_MAX = 300;

/**
 * Errors name keys, ids and values an issue, a model or a config wrote: each is made inert
 * (no mention, link, image or reference; markdown escaped) and bounded, and so is their number.
 */
function bullets(lines: readonly string[]): string {
  const shown = lines.slice(0, LINES_MAX).map((l) => `- ${inlineUntrusted(l, LINE_MAX)}`);
  if (lines.length > LINES_MAX) shown.push(`- … and ${lines.length - LINES_MAX} more`);
  return shown.join('\n');
}
