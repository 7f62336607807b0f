import { describe, expect, it, onTestFinished } from 'vitest';
import { McpToolHub } from '../../src/agent/mcp/tool-hub.js';
import { mcpToolFilter } from '../../src/agent/mcp-tools.js';
import { toolsForTask } from '../../src/agent/tools.js';
import { validateGoalSpec } from '../../src/goal/parse.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { lastToolResults, promptText, reply, text, toolUse } from '../helpers/fake-anthropic.js';
import { git } from '../helpers/git.js';
import { goalHarness, silentLogger } from '../helpers/goal-harness.js';
import { filesWithFixture, fixtureServer } from '../helpers/mcp-fixture.js';
import { seedGoalJson } from '../helpers/spec-builders.js';
import { claudeAgent, fakeApi } from './fixtures.js';

describe('the Claude agent with a repo-configured MCP server (real SDK, fake Messages API)', () => {
  it("offers the server's tools next to the built-in ones, narrowed by mcp_tools, and survives its crash", async () => {
    const fake = await fakeApi();
    fake.push(reply([toolUse('mcp__fixture__crash', {})]), reply([toolUse('mcp__fixture__stamp', { text: 'from-claude' })]), reply([text('Stamped.')]));
    const h = await goalHarness({ files: filesWithFixture() });
    const hub = new McpToolHub([fixtureServer()], { sandbox: new ProcessSandbox(), logger: silentLogger });
    onTestFinished(() => hub.close());
    const agent = claudeAgent(fake, { mcp: hub });
    const result = await h.run(
      {
        goal_id: 'claude-mcp',
        objective: 'Stamp the repository',
        tasks: [{ id: 'stamp', title: 'Stamp', mcp_tools: ['read_file', 'mcp__fixture__stamp', 'mcp__fixture__crash'], verification: 'grep -qx from-claude stamp.txt' }],
      },
      { agent },
    );
    expect(result).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 1 });
    expect(git(h.repo.bare, 'show', 'goal/claude-mcp:stamp.txt')).toBe('from-claude');
    expect(fake.violations).toEqual([]);
    const first = fake.requests[0]!.body;
    expect(first.tools!.map((t) => t.name)).toEqual(['read_file', 'read_log', 'mcp__fixture__stamp', 'mcp__fixture__crash']);
    expect(promptText(first)).toContain('Tools for this task: read_file, read_log, mcp__fixture__stamp, mcp__fixture__crash.');
    // The crash came back to the model as a tool error; the next call restarted the server.
    expect(lastToolResults(fake.requests[1]!.body)[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/MCP server "fixture" crashed while running crash: it exited \(code 3\)/) });
    expect(lastToolResults(fake.requests[2]!.body)[0]).toMatchObject({ is_error: false, content: expect.stringMatching(/^stamped "from-claude"/) });
    await agent.close?.();
  });

  it('tells the model when a server could not start', async () => {
    const fake = await fakeApi();
    fake.push(reply([text('nothing to do')]));
    const h = await goalHarness({ files: filesWithFixture() });
    const hub = new McpToolHub([fixtureServer({ args: ['tools/mcp-fixture.mjs', '--fail-start'] })], { sandbox: new ProcessSandbox(), logger: silentLogger });
    onTestFinished(() => hub.close());
    const result = await h.run({ goal_id: 'no-server', objective: 'x', tasks: [{ id: 't', title: 'T', verification: 'true' }] }, { agent: claudeAgent(fake, { mcp: hub }) });
    expect(result.status).toBe('LOOP_COMPLETE');
    const first = fake.requests[0]!.body;
    expect(first.tools!.some((t) => t.name.startsWith('mcp__'))).toBe(false);
    expect(promptText(first)).toMatch(/Note: MCP server "fixture" is unavailable: failed to start: .*fixture: cannot start \(no config\)/);
  });

  it("the seed's tool names resolve to built-ins and select no MCP tool", () => {
    const seed = validateGoalSpec(JSON.parse(seedGoalJson()));
    for (const task of seed.tasks) {
      expect(toolsForTask(task.mcp_tools).unknown).toEqual([]);
      expect(mcpToolFilter(task.mcp_tools)('mcp__fixture__stamp')).toBe(false);
    }
    expect(toolsForTask(['ripgrep_search', 'filesystem_replace', 'filesystem_view', 'filesystem_write', 'bash_execute']).tools).toEqual([
      'list_files',
      'read_file',
      'search',
      'write_file',
      'edit_file',
      'run_command',
      'read_log',
    ]);
    const filter = mcpToolFilter(['mcp__fixture', 'mcp__other__one', 'mcp__third__*']);
    expect(['mcp__fixture__a', 'mcp__other__one', 'mcp__other__two', 'mcp__third__x', 'mcp__fixturex__a'].filter(filter)).toEqual(['mcp__fixture__a', 'mcp__other__one', 'mcp__third__x']);
    expect(mcpToolFilter(undefined)('mcp__any__thing')).toBe(true);
  });
});
