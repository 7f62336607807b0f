import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { type AnthropicModelOptions, createAnthropicModel } from '../../src/agent/anthropic-model.js';
import { type ClaudeAgentOptions, createClaudeAgent } from '../../src/agent/claude-agent.js';
import type { Model } from '../../src/agent/model.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import type { AgentInput, TaskAgent } from '../../src/ports/agent.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { FakeAnthropic, type FakeAnthropicOptions } from '../helpers/fake-anthropic.js';
import { silentLogger } from '../helpers/goal-harness.js';
import { tempDir } from '../helpers/temp.js';

/** A fake Messages API for one test, closed after it. */
export async function fakeApi(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const fake = await FakeAnthropic.start(opts);
  onTestFinished(() => fake.close());
  return fake;
}

/** The real Anthropic adapter pointed at the fake (fast retries: these tests assert counts, not times). */
export function fakeModel(fake: FakeAnthropic, opts: Partial<AnthropicModelOptions> = {}): Model {
  return createAnthropicModel({ env: fake.env(), retry: { attempts: 5, baseDelayMs: 1, maxDelayMs: 5 }, timeoutMs: 20_000, logger: silentLogger, ...opts });
}

export function claudeAgent(fake: FakeAnthropic, opts: Partial<ClaudeAgentOptions> = {}): TaskAgent {
  return createClaudeAgent({ model: fakeModel(fake), sandbox: new ProcessSandbox(), taskTimeoutS: 30, logger: silentLogger, ...opts });
}

/** A plain workspace directory (no git) holding the given files. */
export async function workspace(files: Record<string, string>): Promise<{ root: string; dir: string }> {
  const root = await tempDir('goal-loop-agent-');
  const dir = join(root, 'ws');
  await mkdir(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return { root, dir };
}

export function spec(raw: object): GoalSpec {
  return validateGoalSpec(raw, { defaultGoalId: 'agent-test' });
}

export function input(goal: GoalSpec, workspaceDir: string, extra: Partial<AgentInput> = {}): AgentInput {
  return { goal, task: goal.tasks[0]!, attempt: 1, workspaceDir, done: [], budgetUsd: 10, signal: new AbortController().signal, ...extra };
}
