import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/git.js';
import { goalHarness } from '../helpers/goal-harness.js';
import { jail } from '../helpers/sandbox-jail.js';

// The host's git must never run what a task or a repository put in a nested repository. A
// filter planted in `sub/.git/config` runs wherever a git process looks inside `sub`: the
// command below touches a host path that does not exist in the jail, so the marker appears
// only if the bot itself ran it.
const filterPlanting = (dir: string, marker: string) =>
  `(mkdir -p ${dir} && cd ${dir} && git init -q && git config filter.x.clean "sh -c 'touch ${marker} 2>/dev/null; cat'" && ` +
  `echo '* filter=x' > .gitattributes && printf a > f && git add . && git -c user.name=a -c user.email=b commit -qm s && printf b > f)`;

/** Every gitlink (mode 160000) in any commit of the repository. */
function gitlinksIn(bare: string): string[] {
  const shas = git(bare, 'rev-list', '--all').split('\n').filter(Boolean);
  return shas.flatMap((sha) =>
    git(bare, 'ls-tree', '-r', sha)
      .split('\n')
      .filter((l) => l.startsWith('160000 ')),
  );
}

describe('nested repositories never reach the host git', () => {
  it('a task that commits a repository of its own, then edits it, runs nothing on the host', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const marker = join(h.root, 'PWNED-by-task');
    const result = await h.run({
      goal_id: 'nested-task',
      objective: 'plant a nested repository with a clean filter',
      limits: { max_retries: 2 },
      tasks: [
        { id: 'plant', title: 'nested repo', run: `${filterPlanting('sub', marker)}; true`, verification: 'true' },
        { id: 'touch', title: 'edit inside it', run: 'printf c > sub/f', verification: 'true' },
      ],
    });
    expect(existsSync(marker)).toBe(false);
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.task_id).toBe('plant');
    expect(result.escalation?.last_error).toContain('sub/.git');
    // Nothing of it was checkpointed: no commit carries a gitlink.
    expect(result.checkpoints).toEqual([]);
    expect(gitlinksIn(h.repo.bare)).toEqual([]);
  });

  it('a repository whose setup plants a repository at a committed gitlink runs nothing on the host', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const marker = join(h.root, 'PWNED-by-repo');
    // The repository itself carries a gitlink at vendor/lib (a submodule never initialised).
    const head = git(h.repo.work, 'rev-parse', 'HEAD');
    git(h.repo.work, 'update-index', '--add', '--cacheinfo', `160000,${head},vendor/lib`);
    git(h.repo.work, '-c', 'user.name=a', '-c', 'user.email=b', 'commit', '-qm', 'vendor lib as a submodule');
    git(h.repo.work, 'push', '-q', 'origin', 'main');

    const result = await h.run(
      {
        goal_id: 'nested-repo',
        objective: 'a harmless goal',
        tasks: [{ id: 'hello', title: 'say hello', run: 'echo hello > hello.txt', verification: 'test -f hello.txt' }],
      },
      { setup: [`${filterPlanting('vendor/lib', marker)}; true`] },
    );
    expect(existsSync(marker)).toBe(false);
    expect(result.status).not.toBe('LOOP_COMPLETE');
    expect(JSON.stringify(result)).toContain('vendor/lib/.git');
  });

  it('a repository in a folder whose name is not UTF-8 is found all the same', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const marker = join(h.root, 'PWNED-bytes');
    const result = await h.run({
      goal_id: 'nested-bytes',
      objective: 'hide a repository behind a name that is not UTF-8',
      limits: { max_retries: 2 },
      tasks: [
        { id: 'plant', title: 'nested repo', run: `${filterPlanting('"$(printf \'vendor\\377\')"', marker)}; true`, verification: 'true' },
        { id: 'touch', title: 'edit inside it', run: 'printf c > "$(printf \'vendor\\377\')/f"', verification: 'true' },
      ],
    });
    expect(existsSync(marker)).toBe(false);
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toContain('vendor\\xff/.git');
    expect(gitlinksIn(h.repo.bare)).toEqual([]);
  });

  it('a nested repository in an ignored folder is refused too', async () => {
    const h = await goalHarness({ sandbox: jail(), files: { '.gitignore': 'deps/\n', 'README.md': 'x\n' } });
    const marker = join(h.root, 'PWNED-ignored');
    const result = await h.run({
      goal_id: 'nested-ignored',
      objective: 'hide a repository where git does not look',
      limits: { max_retries: 1 },
      tasks: [{ id: 'hide', title: 'hide it', run: `${filterPlanting('deps/x', marker)}; echo ok > ok.txt`, verification: 'test -f ok.txt' }],
    });
    expect(existsSync(marker)).toBe(false);
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toContain('deps/x/.git');
  });

  it('a bare-repository layout (HEAD, objects/, refs/), named anything, is refused like a `.git`', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const result = await h.run({
      goal_id: 'nested-bare',
      objective: 'leave a bare repository that git would discover without any `.git`',
      limits: { max_retries: 1 },
      tasks: [
        {
          id: 'bare',
          title: 'bare layout',
          run: "mkdir -p lib/evil/objects lib/evil/refs && echo 'ref: refs/heads/main' > lib/evil/HEAD && printf '[core]\\n\\tbare = true\\n' > lib/evil/config && echo ok > ok.txt",
          verification: 'test -f ok.txt',
        },
      ],
    });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toContain('lib/evil');
    expect(result.checkpoints).toEqual([]);
  });

  it('a gitfile pointing anywhere is refused like a directory', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const outside = await mkdtemp(join(h.root, 'outside-'));
    const result = await h.run({
      goal_id: 'gitfile',
      objective: 'point a gitfile at a repository outside',
      limits: { max_retries: 1 },
      tasks: [{ id: 'gitfile', title: 'gitfile', run: `mkdir -p m && echo 'gitdir: ${outside}' > m/.git && echo x > m/f`, verification: 'true' }],
    });
    await rm(outside, { recursive: true, force: true });
    expect(result.status).toBe('ESCALATED');
    expect(result.escalation?.last_error).toContain('m/.git');
  });

  it('a workspace with a nested repository left behind is cleaned before the next attempt', async () => {
    const h = await goalHarness({ sandbox: jail() });
    const marker = join(h.root, 'PWNED-retry');
    const result = await h.run({
      goal_id: 'nested-retry',
      objective: 'plant on the first attempt only',
      limits: { max_retries: 2 },
      tasks: [
        {
          id: 'once',
          title: 'plant once, then behave',
          run: `if [ "$GOAL_ATTEMPT" = 1 ]; then ${filterPlanting('sub', marker)}; fi; test ! -e sub/.git && echo ok > ok.txt; true`,
          verification: 'true',
        },
      ],
    });
    expect(existsSync(marker)).toBe(false);
    expect(result.status).toBe('LOOP_COMPLETE');
    expect(git(h.repo.bare, 'ls-tree', '-r', '--name-only', 'goal/nested-retry')).not.toContain('sub/');
    expect(git(h.repo.bare, 'ls-tree', '-r', '--name-only', 'goal/nested-retry')).toContain('ok.txt');
  });
});
