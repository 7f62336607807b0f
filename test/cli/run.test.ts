import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectCommand } from '../../src/cli/actions/run.js';
import { cliInvocation } from '../../src/cli/invocation.js';
import { workspaceDir } from '../../src/run/paths.js';
import { readFolderListing } from '../../src/workspace/folder-listing.js';
import { CLI, runCli, startCli } from '../helpers/cli.js';
import { cliProject, parkableFiles } from '../helpers/cli-project.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { until } from '../helpers/until.js';

const project = cliProject;

const LOOP_RESULT_KEYS = [
  'goal_id',
  'status',
  'success',
  'tasks_completed',
  'tasks_total',
  'iterations',
  'errors_recovered',
  'tokens',
  'cost_usd',
  'duration_s',
  'stop_reason',
  'branch',
  'checkpoints',
];

describe('goal-loop run', () => {
  it('completes a goal: exit 0, one LoopResult on stdout, checkpoints pushed to the repo', async () => {
    const p = await project(`goal_id: cli-ok
objective: two files
tasks:
  - id: one
    title: First file
    run: echo 1 > one.txt
    verification: test -f one.txt
  - id: two
    title: Second file
    dependencies: [one]
    run: [echo 2 > two.txt]
    verification: test -f two.txt
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(Object.keys(result)).toEqual(expect.arrayContaining(LOOP_RESULT_KEYS));
    expect(result).toMatchObject({
      goal_id: 'cli-ok',
      status: 'LOOP_COMPLETE',
      success: true,
      tasks_completed: 2,
      tasks_total: 2,
      iterations: 2,
      branch: 'goal/cli-ok',
      tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 },
      cost_usd: 0,
    });
    expect(result.escalation).toBeUndefined();
    const commits = checkpointCommits(p.repo.bare, 'goal/cli-ok');
    expect(commits.map((c) => c.subject)).toEqual(['one: First file', 'two: Second file']);
    expect(result.checkpoints.map((c: { sha: string }) => c.sha)).toEqual(git(p.repo.bare, 'log', '--reverse', '--format=%H', 'main..goal/cli-ok').split('\n'));
    // The live task list went to stderr.
    expect(r.stderr).toContain('two');
    expect(r.stderr).toMatch(/LOOP_COMPLETE 2\/2 tasks/);
  });

  it('exits 2 on escalation, with the escalation in the LoopResult', async () => {
    const p = await project(`goal_id: cli-esc
objective: cannot pass
tasks:
  - id: never
    title: Never passes
    verification: echo "expected 42, got 41"; exit 1
    max_retries: 2
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.code).toBe(2);
    const result = JSON.parse(r.stdout);
    // The same failure twice: "no progress" (max_same_failure 2) ends it with the same attempts.
    expect(result).toMatchObject({ status: 'ESCALATED', success: false, escalation: { task_id: 'never', attempts: 2, cause: 'no_progress' } });
    expect(result.escalation.last_error).toContain('expected 42, got 41');
    expect(r.stderr).toMatch(/escalated: task never made no progress: its last verification failures were identical, after 2 attempt/);
  });

  it('exits 3 when a safeguard stops the goal', async () => {
    const p = await project(`goal_id: cli-stop
objective: too many iterations
limits: { max_iterations: 2 }
tasks:
  - id: flaky
    title: Flaky
    verification: echo "attempt $GOAL_ATTEMPT failed"; false
    max_retries: 5
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'STOPPED', iterations: 2, stop_reason: expect.stringMatching(/max_iterations/) });
  });

  it('exits 3 while a risky task waits for approval, and continues with --approve', async () => {
    const p = await project(`goal_id: cli-risk
objective: risky
tasks:
  - id: drop-table
    title: Drop the legacy table
    risk: critical
    run: echo done > dropped
    verification: test -f dropped
`);
    const first = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(first.code).toBe(3);
    expect(JSON.parse(first.stdout).status).toBe('AWAITING_APPROVAL');
    expect(first.stderr).toMatch(/--approve drop-table/);
    const second = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--approve', 'drop-table'], p.env);
    expect(second.code).toBe(0);
  });

  it('exits 1 with every error on one screen, naming paths and task ids, and no stack trace', async () => {
    const p = await project(`objective: broken spec
tasks:
  - id: task-01
    title: ok
    verification: "true"
  - id: task-02
    title: no verification
  - id: task-03
    title: bad dep
    dependencies: [task-9]
    verification: "true"
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal], p.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('tasks[1].verification: is required (task "task-02")');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const cyc = await project(`objective: cycle
tasks:
  - { id: task-01, title: a, verification: "true", dependencies: [task-02] }
  - { id: task-02, title: b, verification: "true", dependencies: [task-01] }
  - { id: task-03, title: c, verification: "true", dependencies: [task-9] }
`);
    const r2 = await runCli(['run', '--repo', cyc.repo.bare, '--goal', cyc.goal], cyc.env);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain('tasks[2].dependencies: unknown task "task-9" (task "task-03")');
    expect(r2.stderr).toMatch(/dependency cycle: task-0\d -> task-0\d -> task-0\d/);
    expect(r2.stderr.split('\n').length).toBeLessThan(25);
  });

  it('exits 1 on usage errors and on a repository that does not exist', async () => {
    const p = await project('objective: x\ntasks: [{id: a, title: a, verification: "true"}]\n');
    expect((await runCli(['run', '--goal', p.goal], p.env)).code).toBe(1);
    expect((await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'gpt'], p.env)).stderr).toMatch(
      /'--agent <agent>' argument 'gpt' is invalid. Allowed choices are auto, scripted, claude/,
    );
    expect((await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--bogus'], p.env)).code).toBe(1);
    const missing = await runCli(['run', '--repo', join(p.root, 'nope'), '--goal', p.goal], p.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no such directory/);
    const nogoal = await runCli(['run', '--repo', p.repo.bare, '--goal', join(p.root, 'missing.yml')], p.env);
    expect(nogoal.code).toBe(1);
    expect(nogoal.stderr).toMatch(/file not found/);
    expect((await runCli(['frobnicate'], p.env)).code).toBe(1);
  });

  it('reads the repo config from .github/goal-loop.yml and rejects an invalid one with exit 1', async () => {
    const p = await project(
      `goal_id: cfg
objective: config
tasks:
  - { id: a, title: a, verification: "false" }
`,
      { '.github/goal-loop.yml': 'max_retries: 1\ngate: ["true"]\n', 'README.md': 'x\n' },
    );
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ iterations: 1, escalation: { attempts: 1 } });

    const bad = join(p.root, 'bad.yml');
    await writeFile(bad, 'max_retries: -1\nsandbox: docker\ncolour: blue\n');
    const r2 = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--config', bad], p.env);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/max_retries/);
    expect(r2.stderr).toMatch(/sandbox/);
    expect(r2.stderr).toMatch(/unknown key colour/);
  });

  it('resumes after being SIGKILLed at many different moments: every task committed exactly once', async () => {
    const tasks = Array.from({ length: 6 }, (_, i) => {
      const id = `step-${i + 1}`;
      const dep = i > 0 ? `\n    dependencies: [step-${i}]` : '';
      return `  - id: ${id}\n    title: Step ${i + 1}${dep}\n    run: sleep 0.15; echo ${i + 1} >> log.txt\n    verification: test "$(wc -l < log.txt)" -eq ${i + 1}`;
    });
    const p = await project(`goal_id: crashy\nobjective: survive kills\ntasks:\n${tasks.join('\n')}\n`, { 'log.txt': '' });
    const killsAfterMs = [250, 400, 550, 700, 900, 1100, 1300];
    let killed = 0;
    for (const delay of killsAfterMs) {
      const { child, done } = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
      const timer = setTimeout(() => child.kill('SIGKILL'), delay);
      const r = await done;
      clearTimeout(timer);
      if (r.signal === 'SIGKILL') killed += 1;
      const commits = checkpointCommits(p.repo.bare, 'goal/crashy').map((c) => c.task);
      expect(new Set(commits).size).toBe(commits.length);
      if (r.code === 0) break;
    }
    expect(killed).toBeGreaterThan(2);
    const final = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(final.code, final.stderr).toBe(0);
    const commits = checkpointCommits(p.repo.bare, 'goal/crashy');
    expect(commits.map((c) => c.task)).toEqual(['step-1', 'step-2', 'step-3', 'step-4', 'step-5', 'step-6']);
    expect(git(p.repo.bare, 'show', 'goal/crashy:log.txt').split('\n')).toEqual(['1', '2', '3', '4', '5', '6']);
  });

  it('a run killed while taking the lock over from a dead one does not lock out the run after it', async () => {
    const p = await project('goal_id: half-taken\nobjective: x\ntasks:\n  - { id: a, title: a, run: echo a > a.txt, verification: test -f a.txt }\n');
    const lock = `${workspaceDir(join(p.root, 'workspaces'), p.repo.bare, 'half-taken')}.lock`;
    mkdirSync(join(lock, '..'), { recursive: true });
    // Both died: the holder, then the run that was taking its lock over (killed within those few syscalls).
    writeFileSync(lock, `999999999 ${hostname()} 0\n`);
    writeFileSync(`${lock}.takeover`, `999999998 ${hostname()} ${Date.now()}\n`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/waiting for this goal's lock: a goal-loop killed as it took the lock over left it half taken over; it clears within 5 s/);
    expect(checkpointCommits(p.repo.bare, 'goal/half-taken').map((c) => c.task)).toEqual(['a']);
  });

  it('refuses a second concurrent run of the same goal', async () => {
    const p = await project(`goal_id: busy\nobjective: x\ntasks:\n  - { id: a, title: a, run: sleep 3, verification: "true" }\n`);
    const first = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    await waitForLock(join(p.root, 'workspaces'));
    const second = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another goal-loop \(pid \d+\) is working this goal/);
    expect((await first.done).code).toBe(0);
  });

  it('stops cleanly on SIGINT: exit 3, the changes of the attempt rolled back', async () => {
    const p = await project(`goal_id: sigint\nobjective: x\ntasks:\n  - { id: a, title: a, run: "touch half-done; sleep 20", verification: "true" }\n`);
    const { child, done } = startCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    // Interrupt once the run step is under way (it has created its file in the workspace).
    const end = Date.now() + 30_000;
    const started = () => {
      const root = join(p.root, 'workspaces');
      return existsSync(root) && readdirSync(root).some((d) => existsSync(join(root, d, 'sigint', 'half-done')));
    };
    while (!started()) {
      if (Date.now() > end) throw new Error('the run step never started');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'STOPPED', stop_reason: expect.stringMatching(/stopped by the user/) });
    const [repoDir] = readdirSync(join(p.root, 'workspaces'));
    const ws = join(p.root, 'workspaces', repoDir!, 'sigint');
    expect(existsSync(join(ws, '.git'))).toBe(true);
    expect(existsSync(join(ws, 'half-done'))).toBe(false);
  });
});

/** Resolves once a run holds a goal's lock (`<workspace>.lock`) under the workspace root. */
async function waitForLock(root: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (true) {
    const dirs = existsSync(root) ? readdirSync(root) : [];
    if (dirs.some((d) => readdirSync(join(root, d)).some((f) => f.endsWith('.lock')))) return;
    if (Date.now() > end) throw new Error('the first run never took its lock');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('goal-loop run: the inspect line', () => {
  it('ends the summary with a git command that shows the checkpoints, and the command works', async () => {
    const p = await project(`goal_id: cli-inspect
objective: two files
tasks:
  - { id: one, title: First, run: echo 1 > one.txt, verification: test -f one.txt }
  - { id: two, title: Second, dependencies: [one], run: echo 2 > two.txt, verification: test -f two.txt }
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    const attempts = `GOAL_LOOP_DB=${p.env.GOAL_LOOP_DB} ${cliInvocation(process.env, CLI)} logs cli-inspect`;
    expect(lines.slice(-3)).toEqual(['branch: goal/cli-inspect', `attempts: ${attempts}`, `inspect: git -C ${p.repo.bare} log --oneline main..goal/cli-inspect`]);
    // The attempts line runs as printed, in a shell without the run's environment (GOAL_LOOP_DB).
    const logs = execFileSync('sh', ['-c', attempts], { env: { PATH: process.env.PATH }, encoding: 'utf8' });
    expect(logs).toMatch(/two · attempt 1/);
    // What it prints: the two checkpoints, run as the user would (no safe.directory, no workspace).
    const args = lines.at(-1)!.slice('inspect: git '.length).split(' ');
    const shown = git(process.cwd(), ...args).split('\n');
    expect(shown.map((l) => l.replace(/^\w+ /, ''))).toEqual(['two: Second', 'one: First']);
    expect(r.stdout).toBe('');
  });

  it('says so when nothing was pushed yet, and prints nothing of it with --json', async () => {
    const p = await project(`goal_id: cli-inspect-none
objective: x
tasks:
  - { id: a, title: a, verification: "false", max_retries: 1 }
`);
    const r = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(`inspect: no checkpoint yet, so nothing pushed to goal/cli-inspect-none on ${p.repo.bare}`);
    const json = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(json.stderr).not.toMatch(/inspect:/);
    expect(JSON.parse(json.stdout).status).toBe('ESCALATED');
  });

  it('inspectCommand: a local path (relative when under the current folder), a URL, --base, quoting', () => {
    const one = [{ task_id: 'a', sha: 'x' }];
    const two = [...one, { task_id: 'b', sha: 'y' }];
    expect(inspectCommand({ repo: '/home/me/my-app', branch: 'goal/add-slugify', base: 'main', checkpoints: two, cwd: '/home/me' })).toBe('git -C ./my-app log --oneline main..goal/add-slugify');
    expect(inspectCommand({ repo: '/home/me', branch: 'goal/g', base: 'main', checkpoints: two, cwd: '/home/me' })).toBe('git -C . log --oneline main..goal/g');
    expect(inspectCommand({ repo: '/srv/repos/app.git', branch: 'goal/g', base: 'dev', checkpoints: two, cwd: '/home/me' })).toBe('git -C /srv/repos/app.git log --oneline dev..goal/g');
    expect(inspectCommand({ repo: '/srv/my repo', branch: 'goal/g', checkpoints: two, cwd: '/home/me' })).toBe("git -C '/srv/my repo' log --oneline -n 2 goal/g");
    expect(inspectCommand({ repo: "/srv/it's", branch: 'goal/g', base: 'main', checkpoints: one, cwd: '/' })).toBe("git -C './srv/it'\\''s' log --oneline main..goal/g");
    expect(inspectCommand({ repo: 'https://github.com/o/app.git', branch: 'goal/g', base: 'main', checkpoints: two, cwd: '/home/me' })).toBe(
      'git fetch https://github.com/o/app.git goal/g && git log --oneline -n 2 FETCH_HEAD',
    );
    expect(inspectCommand({ repo: 'git@github.com:o/app.git', branch: 'goal/g', checkpoints: [], cwd: '/' })).toBe('no checkpoint yet, so nothing pushed to goal/g on git@github.com:o/app.git');
  });
});

/** A repository whose setup writes a value of its own run, kept by the setup cache. */
const SETUP_FILES = {
  'package.json': '{"name":"app","private":true}\n',
  '.gitignore': 'deps/\n',
  'setup.sh': 'mkdir -p deps && date +%s%N > deps/lib.txt\n',
  '.github/goal-loop.yml': 'setup: [sh setup.sh]\nsetup_inputs: [package.json]\n',
};
const useDeps = (id: string) => `goal_id: ${id}\nobjective: use what setup installed\ntasks:\n  - { id: use, title: Use, run: cp deps/lib.txt ${id}.txt, verification: test -s ${id}.txt }\n`;

describe('goal-loop run leaves the machine as it found it', () => {
  it("exits with its output while the setup cache's ready copy is still being made; the next goal restores it", async () => {
    const p = await project(useDeps('first'), SETUP_FILES);
    // A `cp` that holds every ready copy (and only those) until the gate opens.
    const bin = join(p.root, 'bin');
    const gate = join(p.root, 'gate');
    mkdirSync(bin);
    const realCp = execFileSync('sh', ['-c', 'command -v cp'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'cp'), `#!/bin/sh\ncase "$*" in *.tmp-ready-*) while [ ! -e '${gate}' ]; do sleep 0.05; done;; esac\nexec '${realCp}' "$@"\n`);
    chmodSync(join(bin, 'cp'), 0o755);
    const env = { ...p.env, PATH: `${bin}:${process.env.PATH}` };

    const first = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const cacheRoot = join(p.root, 'workspaces', 'setup-cache');
    const [repoDir] = readdirSync(cacheRoot);
    const names = () => readdirSync(join(cacheRoot, repoDir!));
    const entry = names().find((n) => /^[0-9a-f]{64}$/.test(n))!;
    const ready = () => readdirSync(join(cacheRoot, repoDir!, entry)).filter((n) => n.startsWith('ready-'));
    // The process is gone, and its ready copy is not made yet: it waits, under its temporary name only.
    expect(ready()).toEqual([]);
    expect(names().some((n) => n.startsWith(`.tmp-ready-${entry}-`))).toBe(true);
    writeFileSync(gate, '');
    await until(() => ready().length === 1 && !names().some((n) => n.startsWith('.tmp-ready-')), 'the ready copy published');
    // With its folder listing, which the next goal's first checkpoint takes the copy's folders from.
    const listing = await readFolderListing(join(cacheRoot, repoDir!, entry, ready()[0]!, 'folders'));
    expect([...listing!.folders.keys()]).toEqual(['deps']);

    await writeFile(p.goal, useDeps('second'));
    const second = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], env);
    expect(second.code, second.stderr).toBe(0);
    // What the first goal's setup installed, put back for the second (setup did not run again).
    expect(git(p.repo.bare, 'show', 'goal/second:second.txt')).toBe(git(p.repo.bare, 'show', 'goal/first:first.txt'));
  });

  it("parks a finished goal's workspace of a local path, which the next goal reuses; an escalated goal still resumes", async () => {
    const p = await project('goal_id: park-a\nobjective: x\ntasks:\n  - { id: a, title: A, run: echo a > a.txt, verification: test -f a.txt }\n', parkableFiles());
    const workspaces = join(p.root, 'workspaces');
    const parked = () => (existsSync(join(workspaces, 'warm')) ? readdirSync(join(workspaces, 'warm')).flatMap((k) => readdirSync(join(workspaces, 'warm', k)).filter((n) => /^\d{15}-/.test(n))) : []);
    const a = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], p.env);
    expect(a.code, a.stderr).toBe(0);
    const [repoDir] = readdirSync(workspaces).filter((d) => !['warm', 'mirrors', 'setup-cache'].includes(d));
    expect(existsSync(join(workspaces, repoDir!, 'park-a'))).toBe(false);
    const first = parked();
    expect(first).toHaveLength(1);

    // A goal that escalates after one checkpoint: its workspace goes too, and a rerun resumes from the branch.
    await writeFile(
      p.goal,
      `goal_id: park-b\nobjective: x\ntasks:\n  - { id: one, title: One, run: echo 1 > one.txt, verification: test -f one.txt }\n  - { id: two, title: Two, dependencies: [one], verification: "false", max_retries: 1 }\n`,
    );
    const b = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(b.code, b.stderr).toBe(2);
    expect(existsSync(join(workspaces, repoDir!, 'park-b'))).toBe(false);
    expect(parked()).not.toContain(first[0]); // taken by park-b's clone
    const again = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted', '--json'], p.env);
    expect(again.code, again.stderr).toBe(2);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'ESCALATED', tasks_completed: 1 });
    expect(checkpointCommits(p.repo.bare, 'goal/park-b').map((c) => c.task)).toEqual(['one']);
  });
});
