import { randomBytes } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointCommits, git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail, nodeScript, processesOfUid } from '../helpers/sandbox-jail.js';

// The goal loop, with the real jail, through a goal whose tasks all try to escape. Each escape
// fails, so each task ends as an ordinary passed (or failed, then repaired) task, and the loop
// runs to the end.
const SECRET = `fake-secret-${randomBytes(8).toString('hex')}`;
const homeSecret = join(homedir(), `.goal-loop-loop-test-${process.pid}`);

beforeAll(() => {
  process.env.GITHUB_TOKEN = SECRET;
  writeFileSync(homeSecret, `token=${SECRET}\n`, { mode: 0o644 });
});
afterAll(() => {
  delete process.env.GITHUB_TOKEN;
  rmSync(homeSecret, { force: true });
});

const ONLY_FIRST = (body: string) => `if [ "$GOAL_ATTEMPT" = 1 ]; then ${body}; fi`;

describe('runGoal in the bwrap jail', () => {
  it('turns every escape attempt into an ordinary task result and keeps going to the end', async () => {
    let connections = 0;
    const server = createServer((s) => {
      connections += 1;
      s.on('error', () => undefined);
      s.end('hello\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const sandbox = jail({ limits: { maxProcesses: 256 } });
      const h = await goalHarness({ sandbox });
      const hookRan = join(h.root, 'hook-ran');
      const result = await h.run({
        goal_id: 'escape',
        objective: 'try every way out',
        limits: { task_timeout_s: 3, max_retries: 2 },
        tasks: [
          {
            id: 'steal-secrets',
            title: 'read the bot env, /proc and the bot home',
            run: `{ env; cat /proc/[0-9]*/environ; cat ${homeSecret}; } > loot.txt 2>&1; true`,
            verification: 'test -s loot.txt && ! grep -q fake-secret loot.txt',
          },
          {
            id: 'phone-home',
            title: 'connect to the host loopback',
            run: `${nodeScript(`require('net').connect(${port}, '127.0.0.1').on('data', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`)} > net.txt`,
            verification: 'test -s net.txt && ! grep -q CONNECTED net.txt',
          },
          {
            id: 'plant-hooks',
            title: 'plant a hook and git config for the bot',
            run: `printf '#!/bin/sh\\ntouch ${hookRan}\\n' > .git/hooks/pre-commit; git config core.fsmonitor "touch ${hookRan}"; echo planted > planted.txt`,
            verification: 'test -f planted.txt',
          },
          {
            id: 'edit-workflow',
            title: 'edit a protected workflow on the first attempt',
            run: `${ONLY_FIRST("mkdir -p .github/workflows && echo 'on: push' > .github/workflows/evil.yml")}; echo ok > wf.txt`,
            verification: 'test -f wf.txt',
          },
          {
            id: 'hang',
            title: 'never end on the first attempt',
            run: ONLY_FIRST('nohup sleep 4000 >/dev/null 2>&1 & setsid sleep 4001 & sleep 4002'),
            verification: 'true',
          },
          {
            id: 'fork-bomb',
            title: 'fork flood on the first attempt',
            run: ONLY_FIRST(':(){ :|:& };: ; sleep 30; exit 1'),
            verification: 'true',
          },
        ],
      });

      expect(result).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 6, tasks_total: 6 });
      expect(checkpointCommits(h.repo.bare, 'goal/escape').map((c) => c.task)).toEqual(['steal-secrets', 'phone-home', 'plant-hooks', 'edit-workflow', 'hang', 'fork-bomb']);
      const key = { repo: h.repo.bare, goalId: 'escape' };
      const attempts = await h.ledger.listAttempts(key);
      const failed = attempts.filter((a) => !a.passed).map((a) => ({ task: a.taskId, attempt: a.attempt, phase: a.phase }));
      expect(failed).toEqual(
        expect.arrayContaining([
          { task: 'edit-workflow', attempt: 1, phase: 'checkpoint' },
          { task: 'hang', attempt: 1, phase: 'run' },
          { task: 'fork-bomb', attempt: 1, phase: 'run' },
        ]),
      );
      expect(failed).toHaveLength(3);
      expect(attempts.find((a) => a.taskId === 'edit-workflow' && !a.passed)?.output).toMatch(/protected paths \(\.github\/workflows\/evil\.yml\)/);
      expect(attempts.find((a) => a.taskId === 'hang' && !a.passed)?.output).toMatch(/timed out after 3s and was killed/);

      // What the tasks committed shows the escapes failed.
      const loot = git(h.repo.bare, 'show', 'goal/escape:loot.txt');
      expect(loot).toContain('GOAL_TASK_ID=steal-secrets');
      expect(loot).not.toContain(SECRET);
      expect(git(h.repo.bare, 'show', 'goal/escape:net.txt')).toBe('ECONNREFUSED');
      expect(connections).toBe(0);
      expect(() => git(h.repo.bare, 'show', 'goal/escape:.github/workflows/evil.yml')).toThrow();
      expect(existsSync(hookRan)).toBe(false);
      // The jail started ahead for a next command goes with the sandbox; nothing else of the uid is left.
      await sandbox.dispose();
      expect(processesOfUid(sandbox.uidFor(h.workspaceDir))).toEqual([]);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('escalates a task whose command never ends, at its timeout', async () => {
    const sandbox = jail();
    const h = await goalHarness({ sandbox });
    const result = await h.run({
      goal_id: 'forever',
      objective: 'a command that never ends',
      limits: { task_timeout_s: 1, max_retries: 1 },
      tasks: [{ id: 'spin', title: 'spin forever', verification: 'sleep 4003 & while :; do :; done' }],
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation).toMatchObject({ task_id: 'spin', attempts: 1 });
    expect(result.escalation?.last_error).toMatch(/timed out after 1s and was killed/);
    await sandbox.dispose();
    expect(processesOfUid(sandbox.uidFor(h.workspaceDir))).toEqual([]);
  });
});
