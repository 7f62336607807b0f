import { describe, expect, it } from 'vitest';
import { selectAgent } from '../../src/agent/select-agent.js';
import { parseRepoConfig, type RepoConfig } from '../../src/config/repo-config.js';
import { withTurnLimitNote } from '../../src/goal/failure-summary.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { agentDeps } from '../../src/run/compose-goal-run.js';
import { runConfiguredGoal } from '../../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { type FakeAnthropic, promptText, reply, text, toolUse } from '../helpers/fake-anthropic.js';
import { goalHarness, silentLogger } from '../helpers/goal-harness.js';
import { claudeAgent, fakeApi, input, spec, workspace } from './fixtures.js';

/** A model that never stops calling tools, unless the prompt says the last attempt failed: then it writes done.txt. */
function busyModel(fake: FakeAnthropic): void {
  fake.otherwise((body, i) => {
    const prompt = promptText(body);
    if (prompt.includes('The previous attempt failed')) {
      return body.messages.length > 1 ? reply([text('wrote done.txt')]) : reply([toolUse('write_file', { path: 'done.txt', content: 'ok' }, `toolu_w${i}`)]);
    }
    return reply([toolUse('list_files', {}, `toolu_l${i}`)]);
  });
}

/** One goal run composed as the command line and the App compose it, with the repo config given. */
async function composedRun(fake: FakeAnthropic, config: RepoConfig, raw: object) {
  const h = await goalHarness();
  const goal = validateGoalSpec(raw);
  const result = await runConfiguredGoal({
    repo: h.repo.bare,
    spec: goal,
    config,
    ledger: h.ledger,
    forge: h.forge,
    logger: silentLogger,
    workspace: { remote: h.repo.bare, dir: h.workspaceDir },
    sandbox: new ProcessSandbox(),
    // The limits in force reach the agent as its turn limit (AgentDeps.maxTurns).
    agent: (ctx) => selectAgent('claude', agentDeps(ctx), fake.env()),
    controlPollMs: 50,
  });
  return { h, result };
}

describe('the turn limit (max_turns)', () => {
  it("the tighter of the agent's limit and the spec's wins; the attempt's result says the limit was reached", async () => {
    const fake = await fakeApi();
    fake.otherwise((_b, i) => reply([toolUse('list_files', {}, `toolu_l${i}`)]));
    const ws = await workspace({ 'a.txt': 'a' });
    const task = { id: 't', title: 't', verification: 'true' };

    const tighter = await claudeAgent(fake, { maxTurns: 3 }).work(input(spec({ objective: 'x', tasks: [task], limits: { max_turns: 2 } }), ws.dir));
    expect(tighter).toMatchObject({ ok: true, summary: 'turn limit reached (2 model requests)' });
    expect(fake.requests).toHaveLength(2);
    expect(promptText(fake.requests[0]!.body)).toContain('at most 2 model turns');

    const looser = await claudeAgent(fake, { maxTurns: 3 }).work(input(spec({ objective: 'x', tasks: [task], limits: { max_turns: 9 } }), ws.dir));
    expect(looser).toMatchObject({ ok: true, summary: 'turn limit reached (3 model requests)' });
    expect(fake.requests).toHaveLength(5);
  });

  it('from the repo config, tightened by the spec: the agent stops there and the next attempt is told "turn limit reached"', async () => {
    const fake = await fakeApi();
    busyModel(fake);
    const { h, result } = await composedRun(fake, parseRepoConfig({ max_turns: 3 }), {
      goal_id: 'turns',
      objective: 'Write done.txt',
      tasks: [{ id: 'task-01', title: 'Done', verification: 'test -f done.txt', max_retries: 2 }],
      limits: { max_turns: 2 },
    });
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', iterations: 2 });
    const prompts = fake.answered.map(promptText);
    // Attempt 1: 2 requests (the spec's 2 over the config's 3), then the verification failed.
    expect(prompts.slice(0, 2).every((p) => !p.includes('The previous attempt failed'))).toBe(true);
    expect(prompts[2]).toContain('The previous attempt failed');
    expect(prompts[2]).toContain('Attempt 1: turn limit reached (2 model requests)');
    expect(prompts[2]).toContain('verification `test -f done.txt` exited with code 1');
    expect(prompts).toHaveLength(4);
    const attempts = await h.ledger.listAttempts({ repo: h.repo.bare, goalId: 'turns' });
    expect(attempts.filter((a) => a.phase === 'verify').map((a) => a.passed)).toEqual([false, true]);
    // The attempt record: each model request's tool calls, then why attempt 1 ended.
    const first = (await h.ledger.listAttemptEntries({ repo: h.repo.bare, goalId: 'turns' }, { attempt: 1 })).map((e) => e.entry);
    expect(first.map((e) => e.kind)).toEqual(['baseline', 'turn', 'turn', 'verify', 'end']);
    expect(first[1]).toMatchObject({ kind: 'turn', turn: 1, tools: [{ name: 'list_files', isError: false }] });
    expect(first[4]).toMatchObject({ kind: 'end', outcome: 'turn_limit', reason: expect.stringContaining('turn limit reached (2 model requests)') });
  });

  it('the turn-limit note leads a failure with why the attempt stopped short', () => {
    expect(withTurnLimitNote('verification failed', 1, 7)).toBe(
      'Attempt 1: turn limit reached (7 model requests) before it stopped calling tools. Work in fewer, larger steps. Why that attempt failed:\n\nverification failed',
    );
  });

  it("a spec cannot loosen the repo config's max_turns", async () => {
    const fake = await fakeApi();
    busyModel(fake);
    const { result } = await composedRun(fake, parseRepoConfig({ max_turns: 3 }), {
      goal_id: 'loose',
      objective: 'x',
      tasks: [{ id: 'task-01', title: 'x', verification: 'true' }],
      limits: { max_turns: 50 },
    });
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(fake.answered).toHaveLength(3);
    expect(promptText(fake.answered[0]!)).toContain('at most 3 model turns');
  });
});
