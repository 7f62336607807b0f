import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createClaudeAgent } from '../src/agent/claude-agent.js';
import { renderLedger, renderTask } from '../src/agent/context.js';
import type { Message, Model, ModelRequest, ModelResponse, TextBlock, ToolResultBlock } from '../src/agent/model.js';
import { pricingFor } from '../src/agent/pricing.js';
import { agentSystemPrompt } from '../src/agent/prompts.js';
import { TOOL_NAMES, toolDefinitions } from '../src/agent/tools.js';
import { DEFAULT_PROTECTED_PATHS } from '../src/config/protected-paths.js';
import { validateGoalSpec } from '../src/goal/parse.js';
import type { Sandbox } from '../src/ports/sandbox.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import type { Verdict } from './stats.js';

const TURNS = 60;
const RESULT_BYTES = 20 * 1024;

/** Approximate tokens of a request: 4 characters a token, the same rule for both loops. */
function approxTokens(req: Pick<ModelRequest, 'system' | 'tools' | 'messages'>): number {
  return Math.ceil(JSON.stringify({ system: req.system, tools: req.tools, messages: req.messages }).length / 4);
}

/**
 * A scripted model: on turn i (1..TURNS) it runs `cat out-i.txt` (a 20 KB file), then it says it
 * is done. It records the input tokens of every request it gets.
 */
class ScriptedModel implements Model {
  readonly id = 'claude-sonnet-5-5';
  readonly pricing = pricingFor('claude-sonnet-5-5');
  readonly forcedToolChoice = false;
  readonly inputTokens: number[] = [];

  async complete(req: ModelRequest): Promise<ModelResponse> {
    const tokens = approxTokens(req);
    this.inputTokens.push(tokens);
    const turn = this.inputTokens.length;
    const usage = { input: tokens, output: 40, cache_read: 0, cache_write: 0 };
    if (turn > TURNS) return { model: this.id, content: [{ type: 'text', text: 'done' }], stopReason: 'end_turn', usage };
    return {
      model: this.id,
      content: [
        { type: 'text', text: `Looking at part ${turn}.` },
        { type: 'tool_use', id: `toolu_${turn}`, name: 'run_command', input: { command: `cat out-${turn}.txt` } },
      ],
      stopReason: 'tool_use',
      usage,
    };
  }
}

/** The baseline: the same prompt and tools, but every tool result stays in the history, whole. */
async function naiveLoop(model: ScriptedModel, sandbox: Sandbox, dir: string, firstUser: TextBlock[], system: TextBlock[]): Promise<void> {
  const tools = toolDefinitions(TOOL_NAMES);
  const messages: Message[] = [{ role: 'user', content: firstUser }];
  while (true) {
    const res = await model.complete({ system, tools, messages, maxTokens: 16_000 });
    const calls = res.content.filter((b) => b.type === 'tool_use');
    if (calls.length === 0) return;
    messages.push({ role: 'assistant', content: res.content });
    const results: ToolResultBlock[] = [];
    for (const call of calls) {
      const r = await sandbox.run({ command: (call.input as { command: string }).command, cwd: dir, timeoutMs: 60_000 });
      results.push({ type: 'tool_result', tool_use_id: call.id, content: `exit code ${r.exitCode}\n${r.output}` });
    }
    messages.push({ role: 'user', content: results });
  }
}

/** Prompt size over a 60-turn task with 20 KB tool results: our three-tier context vs a naive full history. */
export async function contextBench(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-context-bench-'));
  try {
    const dir = join(root, 'ws');
    mkdirSync(dir);
    for (let i = 1; i <= TURNS; i++) {
      const line = (j: number) => `part ${i} line ${j}: ${'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(2)}\n`;
      let body = '';
      for (let j = 1; body.length < RESULT_BYTES; j++) body += line(j);
      writeFileSync(join(dir, `out-${i}.txt`), body.slice(0, RESULT_BYTES));
    }
    const sandbox = new ProcessSandbox();
    const goal = validateGoalSpec({
      goal_id: 'context-bench',
      objective: 'Summarise sixty output files',
      constraints: ['Do not change the files'],
      tasks: [{ id: 'task-01', title: 'Read every part', description: 'Read out-1.txt to out-60.txt in order.', verification: 'true' }],
    });
    const task = goal.tasks[0]!;
    process.stdout.write(`context: a scripted ${TURNS}-turn task, every tool result ${RESULT_BYTES / 1024} KB (tokens ≈ characters / 4)\n`);

    const ours = new ScriptedModel();
    const agent = createClaudeAgent({ model: ours, sandbox, maxTurns: TURNS + 5, scratchDir: join(root, 'scratch'), logger: pino({ level: 'silent' }) });
    const outcome = await agent.work({ goal, task, attempt: 1, workspaceDir: dir, done: [], budgetUsd: 1000, signal: new AbortController().signal });
    if (!outcome.ok) throw new Error(`the agent failed in the bench: ${outcome.error}`);

    const naive = new ScriptedModel();
    const system: TextBlock[] = [{ type: 'text', text: agentSystemPrompt({ protectedPaths: DEFAULT_PROTECTED_PATHS }) }];
    const firstUser: TextBlock[] = [
      { type: 'text', text: renderLedger(goal, task, { done: [], files: [] }) },
      { type: 'text', text: renderTask({ task, attempt: 1, tools: [...TOOL_NAMES], maxTurns: TURNS + 5 }) },
    ];
    await naiveLoop(naive, sandbox, dir, firstUser, system);

    const a = ours.inputTokens;
    const b = naive.inputTokens;
    const rows = [1, 5, 10, 20, 30, 40, 50, 60].filter((t) => t <= a.length);
    process.stdout.write('  input tokens per turn (turn: ours / naive)\n');
    process.stdout.write(`    ${rows.map((t) => `${t}: ${a[t - 1]} / ${b[t - 1]}`).join('\n    ')}\n`);
    process.stdout.write(`  every turn, ours:  ${a.join(' ')}\n`);
    process.stdout.write(`  every turn, naive: ${b.join(' ')}\n`);
    const totalOurs = a.reduce((s, x) => s + x, 0);
    const totalNaive = b.reduce((s, x) => s + x, 0);
    const flat = a[TURNS - 1]! / a[4]!;
    const saving = totalNaive / totalOurs;
    process.stdout.write(
      `  totals over ${a.length} requests: ours ${totalOurs}, naive ${totalNaive} (${saving.toFixed(1)}x)\n` +
        `  turn ${TURNS} / turn 5: ours ${flat.toFixed(2)}x, naive ${(b[TURNS - 1]! / b[4]!).toFixed(2)}x\n`,
    );
    return [
      { name: 'context stays flat', pass: flat <= 1.5, detail: `prompt at turn ${TURNS} is ${flat.toFixed(2)}x turn 5 (target <= 1.5x)` },
      { name: 'context vs naive history', pass: saving >= 5, detail: `total input tokens ${saving.toFixed(1)}x smaller than a naive full-history loop (target >= 5x)` },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
