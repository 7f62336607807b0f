import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { runCli } from '../helpers/cli.js';
import { git } from '../helpers/git.js';
import { type GitHttpServer, startGitHttpServer } from '../helpers/git-http-server.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { tempDir } from '../helpers/temp.js';

const USER = 'u';
const SECRET = 's3cr3t-pass';
// The Authorization header carries the secret base64-encoded: storing that is a leak too.
const BASIC = Buffer.from(`${USER}:${SECRET}`).toString('base64');

const GOAL = `goal_id: creds
objective: a task tries to steal the remote's credentials
tasks:
  - id: exfiltrate
    title: Copy the remote URL and the git config into the repository
    run: git config --get remote.origin.url > leak.txt; cat .git/config >> leak.txt
    verification: test -s leak.txt
`;

let server: GitHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup() {
  const root = await tempDir();
  const served = join(root, 'served');
  await createSampleRepo(served);
  server = await startGitHttpServer(served, USER, SECRET);
  const goal = join(root, 'goal.yml');
  await writeFile(goal, GOAL);
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces'), LOG_LEVEL: 'debug' };
  return { root, bare: join(served, 'origin.git'), goal, env, plainUrl: `${server.base}/origin.git` };
}

/** Every regular file under `dir` whose bytes hold one of `needles`. */
function filesHolding(dir: string, needles = [SECRET, BASIC]): string[] {
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile()) {
        const bytes = readFileSync(path);
        if (needles.some((n) => bytes.includes(n))) hits.push(relative(dir, path));
      }
    }
  };
  walk(dir);
  return hits;
}

const holds = (text: string) => text.includes(SECRET) || text.includes(BASIC);

describe('credentials in a --repo URL', () => {
  it("authenticate the run's git, and are stored and shown nowhere, whatever a task reads", async () => {
    const p = await setup();
    const url = p.plainUrl.replace('http://', `http://${USER}:${SECRET}@`);

    const run = await runCli(['run', '--repo', url, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(run.stderr).not.toMatch(/internal error/);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'LOOP_COMPLETE', tasks_completed: 1 });
    // The push went through the authenticating server.
    const pushed = git(p.bare, 'rev-parse', 'refs/heads/goal/creds');
    // A resume reuses the same workspace (found by the credential-free URL) and fetches with auth.
    const workspaces = readdirSync(p.env.GOAL_LOOP_WORKSPACES).sort();
    const again = await runCli(['run', '--repo', url, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'LOOP_COMPLETE', checkpoints: [{ task_id: 'exfiltrate', sha: pushed }] });
    expect(git(p.bare, 'rev-parse', 'refs/heads/goal/creds')).toBe(pushed);
    expect(readdirSync(p.env.GOAL_LOOP_WORKSPACES).sort()).toEqual(workspaces);

    // What the task committed, read back over HTTP (the header keeps the clone's config clean).
    const clone = join(await tempDir(), 'clone');
    // Asynchronously: the server answers from this process's event loop.
    await promisify(execFile)('git', ['-c', `http.extraHeader=Authorization: Basic ${BASIC}`, 'clone', '--quiet', '--branch', 'goal/creds', p.plainUrl, clone], {
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' },
    });
    expect(git(clone, 'rev-parse', 'HEAD')).toBe(pushed);
    const leak = readFileSync(join(clone, 'leak.txt'), 'utf8');
    // The task did read the remote's configuration: it just holds no secret.
    expect(leak).toContain(`127.0.0.1:${server!.port}/origin.git`);

    const status = await runCli(['status'], p.env);
    const statusJson = await runCli(['status', '--json'], p.env);
    expect(status.code).toBe(0);
    expect(statusJson.code).toBe(0);

    // The scan covers the ledger and the mirror, which this run must have written.
    expect(existsSync(join(p.root, 'ledger.db'))).toBe(true);
    expect(readdirSync(join(p.env.GOAL_LOOP_WORKSPACES, 'mirrors')).some((n) => n.endsWith('.git'))).toBe(true);
    const leaks = {
      pushedFiles: holds(leak) || holds(git(clone, 'log', '-p', '--all')),
      files: filesHolding(p.root),
      runOutput: holds(run.stdout + run.stderr + again.stdout + again.stderr),
      // The log redaction is a backstop: nothing should have needed it.
      maskedInLogs: (run.stderr + again.stderr).includes('***@'),
      status: holds(status.stdout + status.stderr),
      statusJson: holds(statusJson.stdout + statusJson.stderr),
    };
    expect(leaks).toEqual({ pushedFiles: false, files: [], runOutput: false, maskedInLogs: false, status: false, statusJson: false });
    // The ledger knows the goal by its credential-free URL.
    expect(status.stdout).toContain(p.plainUrl);
    expect(JSON.parse(statusJson.stdout)).toMatchObject([{ goal_id: 'creds', repo: p.plainUrl }]);
  });

  it('a wrong password fails the run with an error that does not show it', async () => {
    const p = await setup();
    const url = p.plainUrl.replace('http://', `http://${USER}:wrong-pass@`);
    const run = await runCli(['run', '--repo', url, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(run.code).not.toBe(0);
    expect(server!.refused).toBeGreaterThan(0);
    expect(run.stderr).toMatch(new RegExp(`^goal-loop: .*127\\.0\\.0\\.1:${server!.port}`, 'm'));
    expect(run.stderr).not.toContain('wrong-pass');
    expect(run.stdout).not.toContain('wrong-pass');
    expect(filesHolding(p.root, ['wrong-pass', Buffer.from(`${USER}:wrong-pass`).toString('base64')])).toEqual([]);
  });

  it('goal-loop mcp --repo: the same split, for a goal an external agent drives', async () => {
    const p = await setup();
    const config = join(p.root, 'goal-loop.yml');
    await writeFile(config, 'sandbox: process\n');
    const url = p.plainUrl.replace('http://', `http://${USER}:${SECRET}@`);
    const c = await connectGoalLoop({ env: { ...p.env, LOG_LEVEL: 'debug' }, args: ['--repo', url, '--config', config] });
    const spec = 'goal_id: creds-mcp\nobjective: one file\ntasks:\n  - id: notes\n    title: Notes\n    verification: test -s notes.txt\n';
    const started = await c.ok('goal_start', { spec });
    expect(started.repo).toBe(p.plainUrl);
    await writeFile(join(started.workspace, 'notes.txt'), 'notes\n');
    const done = await c.ok('task_complete', { task_id: 'notes' });
    expect(done.completed).toMatchObject({ decision: 'CHECKPOINTED' });
    // Pushed through the authenticating server.
    expect(git(p.bare, 'rev-parse', 'refs/heads/goal/creds-mcp')).toBe(done.completed.checkpoint);
    const status = await c.call('goal_status');
    await c.close();
    expect({ files: filesHolding(p.root), answers: holds(JSON.stringify([started, done, status.text])), stderr: holds(c.stderr()) }).toEqual({ files: [], answers: false, stderr: false });
  });
});
