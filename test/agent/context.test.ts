import { describe, expect, it } from 'vitest';
import { ContextWindow, historyProblems, renderTask } from '../../src/agent/context.js';
import type { AssistantBlock, ToolResultBlock } from '../../src/agent/model.js';
import { type ApiBlock, type MessagesBody, promptText, reply, requestProblems, text, toolUse } from '../helpers/fake-anthropic.js';
import { claudeAgent, fakeApi, input, spec, workspace } from './fixtures.js';

const thinking = (n: number): AssistantBlock => ({ type: 'thinking', thinking: `thought ${n}`, signature: `sig-${n}` });

/** Turn n: one or two tool calls (every third turn calls two in parallel), with a thinking block. */
function turn(n: number): { assistant: AssistantBlock[]; results: ToolResultBlock[]; summaries: string[] } {
  const ids = n % 3 === 0 ? [`a${n}`, `b${n}`] : [`a${n}`];
  return {
    assistant: [thinking(n), { type: 'text', text: `turn ${n}` }, ...ids.map((id) => ({ type: 'tool_use' as const, id, name: 'read_file', input: { path: `f${n}.txt` } }))],
    results: ids.map((id) => ({ type: 'tool_result' as const, tool_use_id: id, content: `content of f${n}.txt` })),
    summaries: ids.map(() => `read_file "f${n}.txt" → lines 1-1 of 1`),
  };
}

describe('the context window (tier 2)', () => {
  it('stays API-valid through folds: whole exchanges fold, each tool_result right after its tool_use', () => {
    const w = new ContextWindow('# Goal ledger', '# Current task', { keep: 3, slack: 2, maxFolded: 6 });
    expect(historyProblems(w.messages())).toEqual([]);
    for (let n = 1; n <= 30; n++) {
      const t = turn(n);
      w.add(n, t.assistant, t.results, t.summaries);
      const messages = w.messages();
      expect(historyProblems(messages)).toEqual([]);
      expect(requestProblems({ model: 'm', max_tokens: 10, tools: [{ name: 'read_file', input_schema: {} }], messages } as unknown as MessagesBody)).toEqual([]);
      expect(w.verbatimCount).toBeLessThanOrEqual(5);
      expect(messages.length).toBe(1 + 2 * w.verbatimCount);
    }
    const messages = w.messages();
    const head = messages[0]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('\n');
    // Older calls: one line each, the oldest only counted.
    expect(head).toContain('# Earlier tool calls of this attempt');
    expect(head).toMatch(/\(\d+ earlier tool calls not shown\)/);
    expect(head.split('\n').filter((l) => l.startsWith('[turn '))).toHaveLength(6);
    expect(head).toContain('[turn 27] read_file "f27.txt" → lines 1-1 of 1');
    // The last exchanges verbatim.
    expect(messages.at(-1)!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'a30', content: 'content of f30.txt' },
      { type: 'tool_result', tool_use_id: 'b30', content: 'content of f30.txt', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('drops thinking blocks at a fold (their prefix changed) and keeps them while the history only grows', () => {
    const w = new ContextWindow('L', 'T', { keep: 2, slack: 2, maxFolded: 50 });
    const thinkingIn = () => w.messages().flatMap((m) => (m.role === 'assistant' ? m.content.filter((b) => b.type === 'thinking').map((b) => (b as { thinking: string }).thinking) : []));
    for (let n = 1; n <= 4; n++) w.add(n, turn(n).assistant, turn(n).results, turn(n).summaries);
    expect(thinkingIn()).toEqual(['thought 1', 'thought 2', 'thought 3', 'thought 4']);
    w.add(5, turn(5).assistant, turn(5).results, turn(5).summaries); // 5 > keep + slack: fold to 2
    expect(w.verbatimCount).toBe(2);
    expect(thinkingIn()).toEqual([]);
    w.add(6, turn(6).assistant, turn(6).results, turn(6).summaries);
    expect(thinkingIn()).toEqual(['thought 6']);
    // The ledger stays marked for caching, and only the newest block carries the rolling breakpoint.
    const marked = w.messages().flatMap((m) => m.content.filter((b) => 'cache_control' in b && b.cache_control));
    expect(marked).toHaveLength(2);
  });

  it('historyProblems names what the API would refuse', () => {
    const use = (id: string): AssistantBlock => ({ type: 'tool_use', id, name: 'x', input: {} });
    const result = (id: string): ToolResultBlock => ({ type: 'tool_result', tool_use_id: id, content: 'r' });
    expect(
      historyProblems([
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'assistant', content: [use('1'), use('2')] },
        { role: 'user', content: [{ type: 'text', text: 'first' }, result('1'), result('2')] },
      ]),
    ).toEqual(['messages[2]: no tool_result (before other blocks) for 1, 2']);
    expect(
      historyProblems([
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'user', content: [result('9')] },
      ]),
    ).toEqual(['messages[0] and messages[1] are both user messages', 'messages[1]: tool_result for 9 does not answer a tool_use of the previous message']);
  });

  it('a long task through the real SDK: every request valid after folding, the prompt stays flat', async () => {
    const fake = await fakeApi();
    const turns = 26;
    fake.otherwise((_body, i) => {
      if (i >= turns) return reply([text('done')]);
      const calls: ApiBlock[] = [toolUse('run_command', { command: `seq 1 3000 | sed 's/^/turn ${i} row /'` }, `toolu_run_${i}`)];
      if (i % 4 === 1) calls.push(toolUse('read_file', { path: 'a.txt' }, `toolu_read_${i}`));
      return { kind: 'message', content: [{ type: 'thinking', thinking: `plan ${i}`, signature: `sig${i}` }, ...calls] };
    });
    const ws = await workspace({ 'a.txt': 'hello\n' });
    const outcome = await claudeAgent(fake).work(input(spec({ objective: 'long', tasks: [{ id: 't1', title: 'long', verification: 'true' }] }), ws.dir));

    expect(outcome.ok).toBe(true);
    expect(fake.requests).toHaveLength(turns + 1);
    expect(fake.violations).toEqual([]);
    for (const r of fake.requests) expect(historyProblems(r.body.messages as never)).toEqual([]);
    const sizes = fake.requests.map((r) => JSON.stringify(r.body).length);
    // Each command printed ~50 KB; the requests stay bounded (a naive history would pass 1 MB).
    expect(Math.max(...sizes)).toBeLessThan(1.6 * sizes[5]!);
    const last = fake.requests.at(-1)!.body;
    expect(last.messages.length).toBeLessThanOrEqual(1 + 2 * 5);
    expect(promptText(last)).toContain('[turn 1] run_command "seq 1 3000');
    expect(promptText(last)).toContain('(log L1)');
  });
});

describe('the task block: what judges the task', () => {
  const task = { id: 'fix', title: 'Fix', dependencies: [], verification: 'npm test', risk: 'low' as const, requires_approval: false, run: [] };

  it('names the protected tests and the package.json scripts the verification runs', () => {
    const block = renderTask({ task, attempt: 1, tools: ['read_file'], maxTurns: 10, testPaths: ['test/**', '**/*.test.*'], protectedScripts: ['test'] });
    expect(block).toContain('files that already exist under `test/**`, `**/*.test.*` may not be changed or deleted');
    expect(block).toContain('The verification runs the package.json script(s) `test`: leave them (and their pre/post scripts) as they are');
  });

  it('says nothing of either for a task that may edit its tests', () => {
    const block = renderTask({ task, attempt: 1, tools: ['read_file'], maxTurns: 10, testPaths: [], protectedScripts: [] });
    expect(block).not.toContain('may not be changed');
    expect(block).not.toContain('package.json script');
  });
});
