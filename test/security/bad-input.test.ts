import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deriveGoalId, parseGoalSpec } from '../../src/goal/parse.js';
import { GOAL_ID_MAX } from '../../src/goal/schema.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { checkpointCommits } from '../helpers/git.js';

// Issue 11: bad input ends in exit 1 and one line naming what is wrong, never exit 4, a stack
// trace, a burnt budget or a hung process.

const OK_GOAL = `goal_id: ok
objective: one file
tasks:
  - id: write-a
    title: Write a
    run: ["echo 1 > a.txt"]
    verification: test -f a.txt
  - id: write-b
    title: Write b
    run: ["echo 1 > b.txt"]
    verification: test -f b.txt
`;

// Nine levels of nine aliases: 9^9 strings once expanded.
const ALIAS_BOMB = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
  .concat('bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`))
  .join('\n');

const project = (goalYaml = OK_GOAL) => cliProject(goalYaml);

/** The CLI, killed after `limitMs` so a spin fails the test instead of hanging it. */
async function run(args: string[], env: Record<string, string>, limitMs = 30_000): Promise<CliResult & { killed: boolean }> {
  const { child, done } = startCli(args, env);
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, limitMs);
  try {
    return { ...(await done), killed };
  } finally {
    clearTimeout(timer);
  }
}

function expectOneClearLine(r: CliResult & { killed: boolean }, ...names: Array<string | RegExp>): void {
  expect(r.killed).toBe(false);
  expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(r.code).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]!.length).toBeLessThan(400);
  for (const name of names) expect(lines[0]).toMatch(name);
}

describe('bad input: exit 1 and one clear line', () => {
  it('refuses a 5,000-character goal_id', async () => {
    const p = await project(OK_GOAL.replace('goal_id: ok', `goal_id: ${'a'.repeat(5000)}`));
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expectOneClearLine(r, 'goal_id', /at most 64/);
  });

  it('refuses a 5,000-character task id before any attempt is made', async () => {
    const p = await project(OK_GOAL.replace('id: write-a', `id: ${'t'.repeat(5000)}`));
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expectOneClearLine(r, 'tasks[0].id', /at most 100/);
  });

  it('truncates a goal id derived from a long file name instead of refusing it', () => {
    const id = deriveGoalId(`/tmp/${'Very long title '.repeat(12)}.yml`);
    expect(id.length).toBeLessThanOrEqual(GOAL_ID_MAX);
    expect(id).toMatch(/^very-long-title-very-long-title/);
    const spec = parseGoalSpec(OK_GOAL.replace('goal_id: ok\n', ''), { source: `${'x'.repeat(200)}.yml` });
    expect(spec.goal_id).toBe('x'.repeat(GOAL_ID_MAX));
  });

  it('refuses a YAML alias bomb in the goal spec', async () => {
    const p = await project(`${ALIAS_BOMB}\n${OK_GOAL}`);
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expectOneClearLine(r, p.goal, /alias/);
  });

  it('refuses a YAML alias bomb in the repo config', async () => {
    const p = await project();
    const config = join(p.root, 'goal-loop.yml');
    await writeFile(config, `${ALIAS_BOMB}\nmax_retries: 1\n`);
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--config', config], p.env);
    expectOneClearLine(r, config, /alias/);
  });

  it('refuses --base naming a branch the repository does not have', async () => {
    const p = await project();
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--base', 'no-such-branch'], p.env);
    expectOneClearLine(r, '"no-such-branch"', p.repo.bare);
    expect(checkpointCommits(p.repo.bare, 'goal/ok')).toEqual([]);
  });

  it('refuses a GOAL_LOOP_DB that is not a database', async () => {
    const p = await project();
    const db = join(p.root, 'garbage.db');
    await writeFile(db, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) % 256)));
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], { ...p.env, GOAL_LOOP_DB: db });
    expectOneClearLine(r, db, /not a database/);
    const s = await run(['status'], { ...p.env, GOAL_LOOP_DB: db });
    expectOneClearLine(s, db, /not a database/);
  });

  it('refuses, promptly, a GOAL_LOOP_DB whose directory cannot be created', async () => {
    const p = await project();
    const db = '/proc/nope/ledger.db';
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], { ...p.env, GOAL_LOOP_DB: db }, 20_000);
    expectOneClearLine(r, db, /cannot create/);
  });

  it('refuses, promptly, a GOAL_LOOP_WORKSPACES that cannot be created', async () => {
    const p = await project();
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], { ...p.env, GOAL_LOOP_WORKSPACES: '/proc/nope' }, 20_000);
    expectOneClearLine(r, '/proc/nope', /cannot create/);
  });
});

describe('--approve with an unknown task id', () => {
  it("warns in one line naming the id and the spec's ids, and carries on", async () => {
    const p = await project();
    const r = await run(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--approve', 'write-c', '--approve', 'all'], p.env);
    expect(r.code).toBe(0);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('write-c'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/--approve.*unknown task.*"write-c".*write-a, write-b/);
    expect(checkpointCommits(p.repo.bare, 'goal/ok')).toHaveLength(2);
  });
});
