import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { appendFile, chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PROTECTED_PATHS } from '../../src/config/protected-paths.js';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { CheckpointRefusedError } from '../../src/ports/workspace.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { git } from '../helpers/git.js';
import { jail, runIn } from '../helpers/sandbox-jail.js';
import { tempDir } from '../helpers/temp.js';

const HOOKS = [
  'pre-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-push',
  'post-checkout',
  'post-merge',
  'post-rewrite',
  'reference-transaction',
  'pre-auto-gc',
  'post-index-change',
  'fsmonitor-watchman',
  'push-to-checkout',
];

async function workspace() {
  const root = await tempDir('goal-loop-hardening-');
  const repo = await createSampleRepo(join(root, 'sample'));
  const ws = new GitWorkspace({
    remote: repo.bare,
    dir: join(root, 'ws', 'goal'),
    goalId: 'g',
    branch: 'goal/g',
    protectedPaths: DEFAULT_PROTECTED_PATHS,
    identity: { name: 'goal-loop', email: 'goal-loop@example.com' },
  });
  await ws.prepare();
  const markers = join(root, 'markers');
  await mkdir(markers);
  return { root, repo, ws, markers, ran: join(markers, 'ran') };
}

/** An executable that records that it ran (and as what). */
async function tattler(path: string, ran: string, label: string): Promise<void> {
  await writeFile(path, `#!/bin/sh\necho "${label} $0" >> ${ran}\n`);
  await chmod(path, 0o755);
}

const checkpoint = (ws: GitWorkspace, taskId: string) => ws.checkpoint({ goalId: 'g', taskId, title: `task ${taskId}`, attempt: 1 });

describe("the bot's git never runs what a task planted in the clone", () => {
  it('ignores planted hooks, hooksPath, fsmonitor, pager, external diff and filter drivers through checkpoint, rollback and sync', async () => {
    const { root, ws, ran } = await workspace();
    const gitDir = join(ws.dir, '.git');
    for (const hook of HOOKS) await tattler(join(gitDir, 'hooks', hook), ran, 'hook');
    const planted = join(root, 'planted-hooks');
    await mkdir(planted);
    for (const hook of HOOKS) await tattler(join(planted, hook), ran, 'hooksPath');
    const program = join(root, 'program.sh');
    await tattler(program, ran, 'config');
    await appendFile(
      join(gitDir, 'config'),
      `[core]\n\tfsmonitor = ${program}\n\thooksPath = ${planted}\n\tpager = ${program}\n\teditor = ${program}\n` +
        `[diff]\n\texternal = ${program}\n[filter "evil"]\n\tclean = ${program}\n\tsmudge = ${program}\n[diff "evil"]\n\ttextconv = ${program}\n`,
    );
    await writeFile(join(gitDir, 'info', 'attributes'), '* filter=evil diff=evil\n');

    await writeFile(join(ws.dir, 'README.md'), '# changed\n');
    expect(await ws.changedFiles()).toEqual(['README.md']);
    await checkpoint(ws, 't1');
    await writeFile(join(ws.dir, 'src', 'index.js'), 'broken');
    await ws.rollback();
    await ws.sync();
    await writeFile(join(ws.dir, 'new.txt'), 'x');
    await checkpoint(ws, 't2');

    expect(existsSync(ran)).toBe(false);
    expect(readFileSync(join(gitDir, 'config'), 'utf8')).not.toContain(program);

    // Control: plain git in the same clone runs the planted hooks and config.
    git(ws.dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '--allow-empty', '-m', 'plain');
    await appendFile(join(gitDir, 'config'), `[core]\n\tfsmonitor = ${program}\n`);
    git(ws.dir, 'status', '--short');
    const lines = readFileSync(ran, 'utf8');
    expect(lines).toMatch(/^hook .*pre-commit$/m);
    expect(lines).toMatch(/^config /m);
  });

  it('keeps the jail from planting anything in .git, and still checkpoints the worktree the jail owns', async () => {
    const { root, repo, ws, ran } = await workspace();
    const sandbox = jail();
    const attack = [
      `printf '#!/bin/sh\\necho jail-hook >> ${ran}\\n' > .git/hooks/pre-commit`,
      `git config core.fsmonitor "echo jail-config >> ${ran}"`,
      `git config core.hooksPath ${root}`,
      'echo work > work.txt',
      'echo done',
    ].join('; ');
    const result = await runIn(sandbox, ws.dir, attack);
    expect(result.output).toContain('done');
    expect(result.output).toContain('Read-only file system');
    expect(statSync(join(ws.dir, 'work.txt')).uid).toBe(sandbox.uidFor(ws.dir));
    expect(existsSync(join(ws.dir, '.git', 'hooks', 'pre-commit'))).toBe(false);

    // The worktree belongs to the jail uid: plain git refuses it, the bot's hardened git does not.
    expect(() => execFileSync('git', ['status'], { cwd: ws.dir, stdio: 'pipe', env: { PATH: process.env.PATH, HOME: root } })).toThrow(/dubious ownership/);
    const cp = await checkpoint(ws, 't1');
    expect(git(repo.bare, 'show', '--format=', '--name-only', cp.sha)).toBe('work.txt'); // pushed
    expect(existsSync(ran)).toBe(false);
  });

  it('refuses a checkpoint that edits .github/workflows, and pushes nothing', async () => {
    const { repo, ws } = await workspace();
    const result = await runIn(jail(), ws.dir, "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/evil.yml && echo ok > ok.txt");
    expect(result.exitCode).toBe(0);
    const refused = checkpoint(ws, 't1');
    await expect(refused).rejects.toBeInstanceOf(CheckpointRefusedError);
    await expect(refused).rejects.toThrow(/protected paths \(\.github\/workflows\/evil\.yml\)/);
    expect(() => git(repo.bare, 'rev-parse', '--verify', '--quiet', 'refs/heads/goal/g')).toThrow();
    await ws.rollback();
    expect(existsSync(join(ws.dir, '.github', 'workflows', 'evil.yml'))).toBe(false);
    expect(existsSync(join(ws.dir, 'ok.txt'))).toBe(false);
  });
});
