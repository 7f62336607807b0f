import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { childLogger } from '../common/child-logger.js';
import { errorMessage } from '../common/errors.js';
import { DEFAULT_PROTECTED_PATHS } from '../config/protected-paths.js';
import { turnLimitText } from '../goal/failure-summary.js';
import { DEFAULT_LIMITS } from '../goal/limits.js';
import type { Usage } from '../goal/usage.js';
import type { AgentInput, AgentOutcome, TaskAgent } from '../ports/agent.js';
import type { Sandbox } from '../ports/sandbox.js';
import { ConfinedFiles } from '../sandbox/confined-files.js';
import { CostGuard, promptTokenBound } from './budget.js';
import { ContextWindow, gatherLedgerFacts, type LedgerFacts, renderLedger, renderTask, textOf, type WindowOptions } from './context.js';
import { type ExternalToolSource, isMcpSelector, mcpToolFilter } from './mcp-tools.js';
import { addUsage, type Model, ModelError, type ModelResponse, NO_USAGE, type TextBlock, type ToolResultBlock, type ToolUseBlock } from './model.js';
import { agentSystemBlocks } from './prompts.js';
import { goalBaseCommit, readRepoInstructions, renderRepoInstructions } from './repo-instructions.js';
import { Scratchpad } from './scratchpad.js';
import { briefInput } from './tool-results.js';
import { ToolBox, type ToolLimits, toolDefinitions, toolsForTask } from './tools.js';

export interface ClaudeAgentOptions {
  model: Model;
  /** Runs `run_command` (the same sandbox as the loop's commands). */
  sandbox: Sandbox;
  /** Timeout of one `run_command`, in seconds: the limits' task_timeout_s (a spec's `limits` may only lower it). */
  taskTimeoutS?: number;
  /** Globs the agent may not write (the repo config's protected_paths). */
  protectedPaths?: readonly string[];
  /** Where the scratchpad logs go; default `<workspace>.logs/agent` (beside the loop's own logs). */
  scratchDir?: string;
  /** Model requests per attempt: the limits' max_turns (default 100; a spec's `limits` may only lower it). The attempt then ends and verification judges. */
  maxTurns?: number;
  /** max_tokens of a request (default 16,000; lowered near the cost cap). */
  maxTokens?: number;
  window?: Partial<WindowOptions>;
  toolLimits?: Partial<ToolLimits>;
  /** The ripgrep binary for `search` (default `rg`). */
  rgPath?: string;
  /** Tools of the repo's MCP servers, offered next to the built-in ones. */
  mcp?: ExternalToolSource;
  logger?: Logger;
}

export const DEFAULT_MAX_TURNS = DEFAULT_LIMITS.max_turns;
export const DEFAULT_MAX_TOKENS = 16_000;

/** The Claude agent: a tool-use loop over the Model port, one call of `work` per attempt. */
export function createClaudeAgent(opts: ClaudeAgentOptions): TaskAgent {
  return new ClaudeAgent(opts);
}

class ClaudeAgent implements TaskAgent {
  readonly name = 'claude';

  /** The repository instructions per workspace, read once: every attempt's system prefix is the same (cached). */
  private readonly instructions = new Map<string, Promise<string | undefined>>();

  constructor(private readonly opts: ClaudeAgentOptions) {}

  /** Stops the MCP servers started for the goal. */
  async close(): Promise<void> {
    await this.opts.mcp?.close();
  }

  async work(input: AgentInput): Promise<AgentOutcome> {
    const { opts } = this;
    const { goal, task, attempt, signal } = input;
    const log = opts.logger && childLogger(opts.logger, { goal: goal.goal_id, task: task.id, attempt });
    const guard = new CostGuard(input.budgetUsd, opts.model.pricing);
    let usage: Usage = { ...NO_USAGE };
    const fail = (kind: 'infra' | 'budget', error: string): AgentOutcome => ({ ok: false, kind, error, usage, costUsd: guard.spentUsd });
    try {
      const attemptDir = (n: number) => join(opts.scratchDir ?? `${input.workspaceDir}.logs/agent`, safe(goal.goal_id), `${safe(task.id)}-a${n}`);
      const scratch = new Scratchpad(attemptDir(attempt));
      await scratch.init();
      const transcript = join(scratch.dir, 'transcript.jsonl');
      const { tools: toolNames, unknown } = toolsForTask(task.mcp_tools);
      const stray = unknown.filter((n) => !isMcpSelector(n));
      if (stray.length > 0) log?.warn({ unknown: stray }, 'mcp_tools names neither a built-in tool nor an mcp__<server>__<tool>; ignored');
      await opts.mcp?.prepare(input.workspaceDir, goal.goal_id);
      const mcpTools = opts.mcp?.definitions(mcpToolFilter(task.mcp_tools)) ?? [];
      const mcpNames = new Set(mcpTools.map((t) => t.name));
      const notices = opts.mcp?.notices() ?? [];
      // The options carry the limits in force; the spec's own `limits` may only lower them.
      const maxTurns = Math.min(opts.maxTurns ?? DEFAULT_MAX_TURNS, goal.limits?.max_turns ?? Number.POSITIVE_INFINITY);
      const timeoutS = Math.min(opts.taskTimeoutS ?? DEFAULT_LIMITS.task_timeout_s, goal.limits?.task_timeout_s ?? Number.POSITIVE_INFINITY);
      const protectedPaths = opts.protectedPaths ?? DEFAULT_PROTECTED_PATHS;
      const toolbox = new ToolBox(
        {
          files: new ConfinedFiles(input.workspaceDir),
          sandbox: opts.sandbox,
          scratch,
          workspaceDir: input.workspaceDir,
          protectedPaths,
          timeoutMs: timeoutS * 1000,
          env: { GOAL_ID: goal.goal_id, GOAL_TASK_ID: task.id, GOAL_ATTEMPT: String(attempt) },
          signal,
          ...(opts.toolLimits ? { limits: opts.toolLimits } : {}),
          ...(opts.rgPath ? { rgPath: opts.rgPath } : {}),
        },
        new Set(toolNames),
      );

      const facts: LedgerFacts = await gatherLedgerFacts(input.workspaceDir, input.done).catch(() => ({ done: input.done.map((d) => ({ ...d, files: [] })), files: [] }));
      const previousFailure = input.previousFailure;
      const failureLogId = previousFailure !== undefined ? await scratch.save('previous-failure', previousFailure) : undefined;
      const maxAttempts = task.max_retries ?? goal.limits?.max_retries;
      const window = new ContextWindow(
        renderLedger(goal, task, facts),
        renderTask({
          task,
          attempt,
          ...(maxAttempts ? { maxAttempts } : {}),
          tools: [...toolNames, ...mcpNames],
          maxTurns,
          ...(previousFailure !== undefined ? { previousFailure } : {}),
          ...(failureLogId ? { failureLogId } : {}),
          ...(input.testPaths ? { testPaths: input.testPaths } : {}),
          ...(input.protectedScripts ? { protectedScripts: input.protectedScripts } : {}),
        }) + (notices.length > 0 ? `\n\n${notices.map((n) => `Note: ${n}`).join('\n')}` : ''),
        opts.window,
      );
      const system: TextBlock[] = agentSystemBlocks({ protectedPaths, repoInstructions: await this.instructionsFor(input.workspaceDir, log) });
      const tools = [...toolDefinitions(toolNames), ...mcpTools];
      let thinkingRetried = false;

      for (let turn = 1; turn <= maxTurns; turn++) {
        if (signal.aborted) return fail('infra', 'the attempt was interrupted');
        const messages = window.messages();
        const admission = guard.admit(promptTokenBound({ system, tools, messages }), opts.maxTokens ?? DEFAULT_MAX_TOKENS);
        if (!admission.ok) {
          log?.warn({ spentUsd: guard.spentUsd, budgetUsd: input.budgetUsd }, admission.reason);
          return fail('budget', admission.reason);
        }
        let response: ModelResponse;
        try {
          response = await opts.model.complete({ system, tools, messages, maxTokens: admission.maxTokens, signal });
        } catch (err) {
          if (err instanceof ModelError && err.status === 400 && /thinking/i.test(err.message) && window.hasThinking() && !thinkingRetried) {
            // A thinking block the API will not take back: drop them all and ask again once.
            log?.warn({ err: err.message }, 'model refused a thinking block of the history; retrying without thinking blocks');
            thinkingRetried = true;
            window.stripThinking();
            turn -= 1;
            continue;
          }
          if (signal.aborted || (err instanceof ModelError && err.aborted)) return fail('infra', 'the attempt was interrupted');
          const message = errorMessage(err);
          log?.error({ err: message }, 'model request failed');
          return fail('infra', `model request failed: ${message}`);
        }
        const cost = guard.charge(response.usage);
        usage = addUsage(usage, response.usage);
        log?.debug({ turn, usage: response.usage, costUsd: cost, stop: response.stopReason }, 'model turn');

        const calls = response.content.filter((b): b is ToolUseBlock => b.type === 'tool_use');
        if (calls.length === 0) {
          await record(transcript, { turn, stop: response.stopReason, usage: response.usage, costUsd: cost, text: textOf(response.content) });
          await input.onTurn?.({ turn, text: textOf(response.content), tools: [] });
          const summary = textOf(response.content);
          return { ok: true, usage, costUsd: guard.spentUsd, ...(summary ? { summary: summary.slice(0, 2000) } : {}) };
        }
        const results: ToolResultBlock[] = [];
        const summaries: string[] = [];
        for (const call of calls) {
          // A task command never runs beside a live server (see ExternalToolSource.suspend).
          if (call.name === 'run_command') await opts.mcp?.suspend();
          const out = signal.aborted
            ? { content: 'not run: the attempt was interrupted', isError: true, summary: `${call.name} → not run` }
            : mcpNames.has(call.name)
              ? await opts.mcp!.call(call.name, call.input, signal)
              : await toolbox.run(call.name, call.input);
          results.push({ type: 'tool_result', tool_use_id: call.id, content: out.content, ...(out.isError ? { is_error: true } : {}) });
          summaries.push(out.summary);
        }
        await record(transcript, {
          turn,
          stop: response.stopReason,
          usage: response.usage,
          costUsd: cost,
          text: textOf(response.content),
          calls: calls.map((c, i) => ({ name: c.name, input: c.input, isError: results[i]!.is_error === true, summary: summaries[i] })),
        });
        await input.onTurn?.({
          turn,
          text: textOf(response.content),
          tools: calls.map((c, i) => ({ name: c.name, input: briefInput(c.input), result: summaries[i] ?? '', isError: results[i]!.is_error === true })),
        });
        window.add(turn, response.content, results, summaries);
      }
      const limitReached = turnLimitText(maxTurns);
      log?.warn({ maxTurns }, `${limitReached}; the verification decides`);
      return { ok: true, usage, costUsd: guard.spentUsd, summary: limitReached, turnLimit: maxTurns };
    } catch (err) {
      if (signal.aborted) return fail('infra', 'the attempt was interrupted');
      const message = errorMessage(err);
      log?.error({ err: message }, 'agent failed');
      return fail('infra', `agent failed: ${message}`);
    } finally {
      // The verification, a checkpoint or a rollback comes next: no server may run beside it.
      await opts.mcp?.suspend();
    }
  }

  /** AGENTS.md and the others at the goal's base commit, rendered once per workspace; best effort. */
  private instructionsFor(workspaceDir: string, log: Logger | undefined): Promise<string | undefined> {
    let found = this.instructions.get(workspaceDir);
    if (!found) {
      found = (async () => {
        const base = await goalBaseCommit(workspaceDir);
        if (!base) return undefined;
        const instr = await readRepoInstructions(workspaceDir, base);
        if (instr.skipped.length > 0) log?.warn({ skipped: instr.skipped, base }, 'repository instructions left out');
        return renderRepoInstructions(instr);
      })().catch((err: unknown) => {
        log?.warn({ err: errorMessage(err) }, 'cannot read the repository instructions; the agent works without them');
        return undefined;
      });
      this.instructions.set(workspaceDir, found);
    }
    return found;
  }
}

function safe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

async function record(path: string, entry: unknown): Promise<void> {
  await appendFile(path, `${JSON.stringify(entry)}\n`, { mode: 0o600 }).catch(() => undefined);
}
