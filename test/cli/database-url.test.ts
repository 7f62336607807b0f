import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { freshDatabase } from '../helpers/postgres.js';

// `status` and `logs` read DATABASE_URL's PostgreSQL when it is set; `run` and `mcp` write and read the same one.
describe('DATABASE_URL for run and mcp', () => {
  it('a goal that `run` works shows in `status` and `logs`, and in the resources of `mcp`, all on PostgreSQL', async () => {
    const p = await cliProject(`goal_id: on-postgres
objective: one file
tasks:
  - id: one
    title: First file
    run: echo 1 > one.txt
    verification: test -f one.txt
`);
    const url = await freshDatabase();
    // The SQLite file GOAL_LOOP_DB names is never made: DATABASE_URL wins, as for `status`.
    const env = { ...p.env, DATABASE_URL: url };
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], env);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    expect(existsSync(p.env.GOAL_LOOP_DB)).toBe(false);
    // Its hint names no ledger (the URL may hold a password): DATABASE_URL is in the user's environment.
    expect(r.stderr).toMatch(/^attempts: .* logs on-postgres$/m);
    expect(r.stderr).not.toContain('GOAL_LOOP_DB=');

    const status = await runCli(['status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ goal_id: 'on-postgres', state: 'LOOP_COMPLETE', repo: p.repo.bare, tasks_completed: 1 })]);
    const logs = await runCli(['logs', 'on-postgres'], env);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain('one');

    const mcp = await connectGoalLoop({ env: { ...env, GOAL_LOOP_DB: join(p.root, 'mcp.db') }, args: ['--repo', p.repo.bare] });
    const { resources } = await mcp.client.listResources();
    expect(resources.map((x) => x.uri)).toContain('goal://on-postgres/ledger');
    await mcp.close();
    expect(existsSync(join(p.root, 'mcp.db'))).toBe(false);
  });
});
