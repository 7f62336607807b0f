import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { InputError, UsageError } from '../common/errors.js';
import { RepoConfigError } from '../config/repo-config.js';
import { LIMIT_KEYS } from '../goal/limits.js';
import { formatSpecError, SpecValidationError } from '../goal/parse.js';
import { mermaidGraph, orderedChecklist } from '../goal/render.js';
import { LimitsSchema } from '../goal/schema.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { LockedError } from '../run/lock.js';
import { configureGoal } from './configure.js';
import { SessionError } from './goal-session.js';
import { confirmWithHuman } from './human.js';
import { registerGoalResources } from './resources.js';
import { Sessions, type SessionsOptions } from './sessions.js';
import { goalStatus } from './status.js';
import { attemptOutcome, taskLine, turnPayload } from './turns.js';

export const SERVER_NAME = 'goal-loop';

const goalId = z.string().min(1).optional().describe('The goal (its goal_id); may be left out while only one goal is open.');
const specSource = {
  goal: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Path of a goal spec file (JSON, YAML, or markdown with a ```goal block), relative to the server's directory; it must lie under the repository or the server's directory (elsewhere needs the human's yes).",
    ),
  spec: z.string().min(1).optional().describe('The goal spec itself, as JSON, YAML, or markdown with a ```goal block. Give this or `goal`.'),
};

/**
 * `goal-loop mcp`: the governed loop as MCP tools for an external agent working on a local
 * repository. The agent edits files; the loop decides. No task is done without its verification
 * passing in the sandbox, the budgets and the circuit breaker hold, and risky tasks, looser
 * budgets and resuming after an escalation need a human (asked through MCP elicitation).
 */
export function createGoalLoopMcpServer(opts: SessionsOptions & { version: string }): { server: McpServer; sessions: Sessions } {
  const server = new McpServer({ name: SERVER_NAME, version: opts.version }, { capabilities: { logging: {} } });
  const sessions = new Sessions(opts);
  const tool = wrap(opts.logger);

  server.registerTool(
    'goal_plan',
    {
      title: 'Validate a goal spec',
      description: 'Validates a goal spec (task graph with a verification command per task) and returns the tasks in the order the loop takes them, plus the graph as mermaid. Changes nothing.',
      inputSchema: specSource,
      annotations: { readOnlyHint: true },
    },
    tool(async (args) => {
      const spec = await sessions.loadSpec(args, (message, otherwise) => confirmWithHuman(server.server, message, otherwise));
      const lines = [`goal: ${spec.goal_id}`, `objective: ${spec.objective}`, '', 'tasks, in order:', orderedChecklist(spec.tasks)];
      const checks = spec.acceptance_criteria.map((c) => `- ${c.description}${c.check ? `  [check: ${c.check}]` : ''}`);
      if (checks.length > 0) lines.push('', 'acceptance criteria:', ...checks);
      lines.push('', '```mermaid', mermaidGraph(spec.tasks), '```');
      return lines.join('\n');
    }),
  );

  server.registerTool(
    'goal_start',
    {
      title: 'Start or resume a goal',
      description:
        'Starts the goal on a local git repository: a private clone works on branch goal/<goal_id>, and every verified task is pushed back to the repository as a checkpoint commit. Starting a goal that has checkpoints resumes it. Returns the first task (as next_task does).',
      inputSchema: {
        ...specSource,
        repo: z
          .string()
          .min(1)
          .optional()
          .describe(
            "Path of the git repository; default: the server's --repo, else its working directory. Another repository needs the human's yes (asked through elicitation) before anything touches it; a path inside goal-loop's own workspaces is refused.",
          ),
        base: z
          .string()
          .min(1)
          .optional()
          .describe(
            "Branch whose code the goal builds on when the goal branch does not exist yet; default: the repository's default branch (HEAD). Another branch needs the human's yes (asked through elicitation); the repo config always comes from the default branch or the server's --config.",
          ),
      },
    },
    tool(async (args) => {
      const session = await sessions.open(args, (message, otherwise) => confirmWithHuman(server.server, message, otherwise));
      await configureGoal(server.server, session, { action: 'resume' }, { fromStart: true });
      return {
        goal_id: session.key.goalId,
        repo: session.key.repo,
        branch: session.branch,
        workspace: session.workspaceDir,
        limits: session.limits(),
        next: await turnPayload(session, await session.turn()),
      };
    }),
  );

  server.registerTool(
    'next_task',
    {
      title: 'Get the next task',
      description:
        'Returns the task to work on now (action BUILD: the task, its attempt, the failure of the previous attempt, the workspace path where to edit files, the budget), or action STOP with the safeguard that stopped the goal (complete, approval, escalated, paused, max_iterations, cost_cap_usd, max_wall_minutes, circuit_breaker…).',
      inputSchema: { goal_id: goalId },
      annotations: { readOnlyHint: true },
    },
    tool(async (args) => {
      const session = sessions.find(args.goal_id);
      return turnPayload(session, await session.turn());
    }),
  );

  server.registerTool(
    'task_complete',
    {
      title: 'Report a task as worked',
      description:
        "Tells the loop you finished working on the current task. The loop runs the task's verification command in its sandbox: on a pass it commits and pushes a checkpoint; on a failure it rolls the workspace back and returns the same task again with the failure (REPAIR), or escalates when the task is out of attempts. Returns that decision and the next task (or STOP).",
      inputSchema: {
        goal_id: goalId,
        task_id: z.string().min(1).describe('The id of the task you worked on (the one next_task returned).'),
        summary: z.string().max(4000).optional().describe('What you changed, in a few sentences (kept in the log).'),
        cost_usd: z.number().nonnegative().optional().describe("What your model spent on this attempt, in US dollars; counts against the goal's cost cap."),
        tokens: z
          .strictObject({
            input: z.number().int().nonnegative().optional().describe('Input tokens.'),
            output: z.number().int().nonnegative().optional().describe('Output tokens.'),
            cache_read: z.number().int().nonnegative().optional().describe('Cache read tokens.'),
            cache_write: z.number().int().nonnegative().optional().describe('Cache write tokens.'),
          })
          .optional()
          .describe('Tokens your model used on this attempt.'),
        infra_error: z
          .string()
          .min(1)
          .optional()
          .describe('Set only when your own tools failed (not the task): no verification runs, the attempt is retried, and consecutive ones trip the circuit breaker.'),
      },
    },
    tool(async (args) => {
      const session = sessions.find(args.goal_id);
      const attempt = session.complete(args.task_id, {
        ...(args.summary ? { summary: args.summary } : {}),
        ...(args.cost_usd !== undefined ? { costUsd: args.cost_usd } : {}),
        ...(args.tokens ? { usage: args.tokens } : {}),
        ...(args.infra_error ? { infraError: args.infra_error } : {}),
      });
      const turn = await session.turn();
      return { completed: await attemptOutcome(session, args.task_id, attempt, turn), next: await turnPayload(session, turn) };
    }),
  );

  server.registerTool(
    'goal_status',
    {
      title: 'Goal status',
      description: "The goal's state, its tasks (status, attempts, checkpoint), counters and budgets. Without goal_id and with no goal open, lists the goals of the ledger.",
      inputSchema: { goal_id: goalId },
      annotations: { readOnlyHint: true },
    },
    tool(async (args) => goalStatus(sessions, opts.ledger, args.goal_id, taskLine)),
  );

  server.registerTool(
    'goal_config',
    {
      title: 'Budgets, pause and resume, approvals',
      description:
        'Pauses, stops or resumes the goal, approves risky tasks, and changes its budgets. Lowering a budget or pausing takes effect at once. Approving a task, raising a budget, and resuming after an escalation or a stop need a human: the server asks them through your MCP client (elicitation) and refuses when it cannot ask.',
      inputSchema: {
        goal_id: goalId,
        action: z
          .enum(['pause', 'resume', 'stop'])
          .optional()
          .describe('pause: stop now, roll back the attempt in progress, keep the checkpoints; resume: continue from the last checkpoint; stop: end the run.'),
        approve: z.array(z.string().min(1)).optional().describe('Ids of tasks to approve (tasks above max_risk or with requires_approval wait for this).'),
        limits: LimitsSchema.optional().describe(`New budgets for this goal (${LIMIT_KEYS.join(', ')}).`),
      },
    },
    tool(async (args) => {
      const session = sessions.find(args.goal_id);
      const changes = await configureGoal(server.server, session, {
        ...(args.action ? { action: args.action } : {}),
        ...(args.approve ? { approve: args.approve } : {}),
        ...(args.limits ? { limits: args.limits } : {}),
      });
      return { changes, status: await turnPayload(session, await session.turn()) };
    }),
  );

  registerGoalResources(server, sessions, opts.ledger);
  return { server, sessions };
}

/** How often a long call (setup, verification) reports progress, so clients keep waiting. */
const PROGRESS_EVERY_MS = 10_000;

/** A tool handler: its value becomes JSON text; a driver's mistake becomes a tool error, never a crash. */
function wrap(logger: Logger) {
  return <A>(handler: (args: A) => Promise<unknown>) =>
    async (args: A, extra: RequestHandlerExtra<ServerRequest, ServerNotification>): Promise<CallToolResult> => {
      const token = extra._meta?.progressToken;
      let ticks = 0;
      const progress =
        token === undefined
          ? undefined
          : setInterval(() => {
              ticks += 1;
              const params = { progressToken: token, progress: ticks, message: 'the loop is working (setup, verification or checkpoint)' };
              extra.sendNotification({ method: 'notifications/progress', params }).catch(() => undefined);
            }, PROGRESS_EVERY_MS);
      try {
        const value = await handler(args);
        return { content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }] };
      } catch (err) {
        return { isError: true, content: [{ type: 'text', text: errorText(err, logger) }] };
      } finally {
        clearInterval(progress);
      }
    };
}

function errorText(err: unknown, logger: Logger): string {
  if (err instanceof SpecValidationError) return `invalid goal spec (${err.source}):\n${err.errors.map((e) => `  ${formatSpecError(e)}`).join('\n')}`;
  if (err instanceof SessionError || err instanceof UsageError || err instanceof InputError || err instanceof RepoConfigError || err instanceof LockedError || err instanceof SandboxUnavailableError) {
    return err.message;
  }
  logger.error({ err }, 'internal error in an MCP tool');
  return `internal error: ${err instanceof Error ? err.message : String(err)}`;
}
