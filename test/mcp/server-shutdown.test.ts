import { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { mcpProject } from '../helpers/mcp-project.js';

const GOAL = `goal_id: shutdown
objective: two tasks, the server goes away during the second
tasks:
  - { id: one, title: One, verification: test -s one.txt }
  - { id: two, title: Two, dependencies: [one], verification: test -s two.txt }
`;

/** The state `goal-loop status --json` reports for the goal. */
async function stateOf(env: Record<string, string>): Promise<string | undefined> {
  const r = await runCli(['status', '--json'], env);
  const goals = JSON.parse(r.stdout) as Array<{ goal_id: string; state: string }>;
  return goals.find((g) => g.goal_id === 'shutdown')?.state;
}

// The README promises that stopping the server pauses the running goal. The SDK client's
// close() ends the session by closing the server's stdin: that must pause it like SIGTERM does.
describe('goal-loop mcp: every way the server ends pauses the running goal', () => {
  it.each(['client close (stdin ends)', 'SIGTERM'] as const)('%s: the goal is PAUSED, the attempt rolled back, the lock released', async (how) => {
    const p = await mcpProject();
    const c = await connectGoalLoop({ env: p.env, args: p.args });
    const started = await c.ok('goal_start', { spec: GOAL });
    await writeFile(join(started.workspace, 'one.txt'), '1\n');
    await c.ok('task_complete', { task_id: 'one' });
    await writeFile(join(started.workspace, 'two.txt'), 'half done\n');
    const pid = (c.client.transport as unknown as { pid: number | null }).pid;
    expect(pid).toBeGreaterThan(0);
    if (how === 'SIGTERM') process.kill(pid!, 'SIGTERM');
    await c.close();
    // The server process is gone once it has finished shutting down.
    for (let i = 0; i < 200 && alive(pid!); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(pid!)).toBe(false);
    expect(await stateOf(p.env)).toBe('PAUSED');
    expect(existsSync(join(started.workspace, 'two.txt'))).toBe(false);
    expect(existsSync(join(started.workspace, 'one.txt'))).toBe(true);
    expect(readdirSync(join(p.root, 'workspaces'), { recursive: true }).filter((n) => String(n).endsWith('.lock'))).toEqual([]);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
