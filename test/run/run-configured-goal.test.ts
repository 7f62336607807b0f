import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseRepoConfig } from '../../src/config/repo-config.js';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { NO_USAGE } from '../../src/goal/usage.js';
import { SqliteLedger } from '../../src/ledger/sqlite/sqlite-ledger.js';
import { GoalAbandonedError } from '../../src/loop/controller.js';
import type { TaskAgent } from '../../src/ports/agent.js';
import type { Ledger } from '../../src/ports/ledger.js';
import type { Sandbox } from '../../src/ports/sandbox.js';
import type { AgentContext } from '../../src/run/compose-goal-run.js';
import { runConfiguredGoal } from '../../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { RecordingForge } from '../helpers/recording-forge.js';
import { tempDir } from '../helpers/temp.js';

const logger = pino({ level: 'silent' });

/** A real repository, ledger and sandbox; an agent that writes the file its task checks, and counts its close(). */
async function fixture(ledgerOf: (l: SqliteLedger) => Ledger = (l) => l) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const sqlite = new SqliteLedger(join(root, 'ledger.db'));
  onTestFinished(() => sqlite.close());
  const seen = { closed: 0, sandboxes: 0, contexts: [] as AgentContext[] };
  const agent: TaskAgent = {
    name: 'scribe',
    work: async (task) => {
      await writeFile(join(task.workspaceDir, `${task.task.id}.txt`), 'done\n');
      return { ok: true, usage: { ...NO_USAGE }, costUsd: 0 };
    },
    close: async () => {
      seen.closed += 1;
    },
  };
  const spec = validateGoalSpec({
    goal_id: 'entry',
    objective: 'one entry point',
    limits: { max_iterations: 7 },
    tasks: [{ id: 'a', title: 'A', verification: 'test -s a.txt' }],
  });
  const input = {
    repo: repo.bare,
    spec,
    config: parseRepoConfig({ max_iterations: 9, cost_cap_usd: 3 }),
    ledger: ledgerOf(sqlite),
    forge: new RecordingForge(),
    logger,
    workspace: { remote: repo.bare, dir: join(root, 'ws') },
    sandbox: async (): Promise<Sandbox> => {
      seen.sandboxes += 1;
      return new ProcessSandbox();
    },
    agent: (ctx: AgentContext) => {
      seen.contexts.push(ctx);
      return agent;
    },
    controlPollMs: 50,
  };
  return { input, seen, sqlite };
}

describe('runConfiguredGoal', () => {
  it('chooses the sandbox once, runs with the limits in force, and closes the agent it made', async () => {
    const { input, seen, sqlite } = await fixture();
    const result = await runConfiguredGoal(input);
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(seen.sandboxes).toBe(1);
    expect(seen.contexts).toHaveLength(1);
    expect(seen.contexts[0]!.limits).toMatchObject({ max_iterations: 7, cost_cap_usd: 3 });
    expect(seen.closed).toBe(1);
    expect((await sqlite.getGoal({ repo: input.repo, goalId: 'entry' }))?.state).toBe('LOOP_COMPLETE');
  });

  it('closes the agent when the run fails', async () => {
    const { input, seen } = await fixture(
      (l) =>
        new Proxy(l, {
          get: (target, prop, receiver) => (prop === 'upsertGoal' ? () => Promise.reject(new Error('ledger down')) : Reflect.get(target, prop, receiver)),
        }),
    );
    await expect(runConfiguredGoal(input)).rejects.toThrow('ledger down');
    expect(seen.closed).toBe(1);
  });

  it('closes the agent when the run is abandoned', async () => {
    const { input, seen } = await fixture();
    const abandon = new AbortController();
    abandon.abort();
    await expect(runConfiguredGoal({ ...input, abandon: abandon.signal })).rejects.toBeInstanceOf(GoalAbandonedError);
    expect(seen.closed).toBe(1);
  });

  it('gives back the result when the agent will not close, and says so', async () => {
    const { input } = await fixture();
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const stubborn: TaskAgent = {
      name: 'stubborn',
      work: async (i) => {
        await writeFile(join(i.workspaceDir, `${i.task.id}.txt`), 'done\n');
        return { ok: true, usage: { ...NO_USAGE }, costUsd: 0 };
      },
      close: () => Promise.reject(new Error('server hung')),
    };
    const result = await runConfiguredGoal({ ...input, logger: log, agent: () => stubborn });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(lines.some((l) => l.includes("cannot stop the agent's MCP servers") && l.includes('server hung'))).toBe(true);
  });

  it('takes a sandbox the caller already chose (the App opens it before the run) and chooses none', async () => {
    const { input, seen } = await fixture();
    const result = await runConfiguredGoal({ ...input, sandbox: new ProcessSandbox() });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(seen.sandboxes).toBe(0);
  });
});
