import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { McpToolHub } from '../../src/agent/mcp/tool-hub.js';
import type { CommandRequest, Sandbox, SpawningSandbox, SpawnRequest } from '../../src/ports/sandbox.js';
import { claudeAgent, fakeApi } from '../agent/fixtures.js';
import { lastToolResults, reply, text, toolUse } from '../helpers/fake-anthropic.js';
import { goalHarness, silentLogger } from '../helpers/goal-harness.js';
import { FIXTURE_PATH, filesWithFixture, fixtureServer } from '../helpers/mcp-fixture.js';
import { jail } from '../helpers/sandbox-jail.js';

/** Host processes (any jail layer) running the fixture server for this workspace. */
function liveServers(workspace: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.includes(FIXTURE_PATH) && cmd.includes(workspace)) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** The real jail, noting how many servers are alive each time a command is about to start. */
function observingJail(workspace: () => string, seen: Array<{ command: string; servers: number }>): SpawningSandbox {
  const inner = jail();
  return {
    kind: inner.kind,
    run: (req: CommandRequest) => {
      seen.push({ command: req.command, servers: liveServers(workspace()).length });
      return inner.run(req);
    },
    spawn: (req: SpawnRequest) => inner.spawn(req),
  } satisfies Sandbox & SpawningSandbox;
}

// A repo MCP server lives for the run, but the jail gives it the workspace read-only, and it is
// stopped whenever a task command or the bot's own git is about to work on the tree: a live
// server could otherwise take a writable handle from a task (a unix socket in the workspace)
// and change the tree between the bot's checks and their use.
describe("repo MCP servers never run beside a task command or the bot's git", () => {
  it('stops the server for run_command and at the end of the turn, and starts it again on the next call', async () => {
    const fake = await fakeApi();
    fake.push(reply([toolUse('mcp__fixture__whoami', {})]), reply([toolUse('run_command', { command: 'echo ran > ran.txt' })]), reply([toolUse('mcp__fixture__whoami', {})]), reply([text('Done.')]));
    const h = await goalHarness({ files: filesWithFixture() });
    const seen: Array<{ command: string; servers: number }> = [];
    const sandbox = observingJail(() => h.workspaceDir, seen);
    const hub = new McpToolHub([fixtureServer()], { sandbox, logger: silentLogger });
    onTestFinished(() => hub.close());
    const result = await h.run(
      { goal_id: 'mcp-suspend', objective: 'use the server around a command', tasks: [{ id: 't', title: 'T', verification: 'test -f ran.txt' }] },
      { agent: claudeAgent(fake, { mcp: hub, sandbox }), sandbox },
    );
    expect(result.status).toBe('LOOP_COMPLETE');
    // Both calls reached a live server; the second one started it again.
    expect(lastToolResults(fake.requests[1]!.body)[0]).toMatchObject({ is_error: false });
    expect(lastToolResults(fake.requests[3]!.body)[0]).toMatchObject({ is_error: false });
    // The baseline, the run_command and the verification each started with no server alive.
    expect(seen.map((s) => s.command)).toEqual(['test -f ran.txt', 'echo ran > ran.txt', 'test -f ran.txt']);
    expect(seen.map((s) => s.servers)).toEqual([0, 0, 0]);
    // And none is left after the turn, while the bot checkpoints.
    expect(liveServers(h.workspaceDir)).toEqual([]);
  });
});
