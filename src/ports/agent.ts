import type { GoalSpec, TaskSpec } from '../goal/schema.js';
import type { Usage } from '../goal/usage.js';
import type { ToolCallSummary } from './attempt-log.js';

/**
 * Does the open-ended part of a task in the workspace (the Claude agent, or a scripted one in
 * tests). It never decides that a task passed: the verification command does.
 */
export interface TaskAgent {
  readonly name: string;
  work(input: AgentInput): Promise<AgentOutcome>;
  /** Ends what the agent keeps for the goal's lifetime (e.g. its MCP servers); called after the run. */
  close?(): Promise<void>;
}

export interface AgentInput {
  goal: GoalSpec;
  task: TaskSpec;
  attempt: number;
  /** Trimmed output of the previous attempt's failure, for the repair. */
  previousFailure?: string;
  /** Globs of the test files that verify the task: it may add files there, not change existing ones. */
  testPaths?: readonly string[];
  /** The root package.json scripts its verification runs (`npm test` → test): it may not change them. */
  protectedScripts?: readonly string[];
  workspaceDir: string;
  /** Tasks already done, with their checkpoints. */
  done: Array<{ taskId: string; sha: string }>;
  /** Dollars still allowed before the cost cap. */
  budgetUsd: number;
  signal: AbortSignal;
  /** Called after each model request with what it said and the tools it called (the attempt record). */
  onTurn?: (turn: { turn: number; text: string; tools: ToolCallSummary[] }) => Promise<void>;
}

export type AgentOutcome =
  /** `turnLimit`: the agent stopped at its limit of model requests (the verification still decides). */
  | { ok: true; usage: Usage; costUsd: number; summary?: string; turnLimit?: number }
  /** `infra`: the model API or the agent's machinery failed; `budget`: the cost cap was reached. */
  | { ok: false; kind: 'infra' | 'budget'; error: string; usage: Usage; costUsd: number };
