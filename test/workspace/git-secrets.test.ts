import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { GitWorkspace } from '../../src/workspace/git-workspace.js';
import { tempDir } from '../helpers/temp.js';

const TOKEN = 'ghs_test_token_never_on_disk';
const savedPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = savedPath;
});

describe('remote credentials', () => {
  it('reach git only through the environment of the remote commands: never argv, never .git/config', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    // A git wrapper that logs every invocation's argv and GIT_CONFIG_* entries, then runs git.
    const bin = join(root, 'bin');
    const log = join(root, 'git-calls.log');
    await import('node:fs/promises').then((fs) => fs.mkdir(bin));
    writeFileSync(join(bin, 'git'), `#!/bin/sh\n{ echo "ARGV $*"; env | grep '^GIT_CONFIG_VALUE' | sed 's/^/ENV /'; } >> ${log}\nexec /usr/bin/git "$@"\n`);
    chmodSync(join(bin, 'git'), 0o755);
    process.env.PATH = `${bin}:${savedPath}`;

    const ws = new GitWorkspace({
      remote: repo.bare,
      dir: join(root, 'ws'),
      goalId: 'g',
      branch: 'goal/g',
      identity: { name: 'bot', email: 'bot@example.com' },
      remoteConfig: () => ({ 'http.https://github.com/.extraHeader': `AUTHORIZATION: basic ${TOKEN}` }),
    });
    await ws.prepare();
    writeFileSync(join(ws.dir, 'f.txt'), 'x');
    await ws.checkpoint({ goalId: 'g', taskId: 't', title: 'f', attempt: 1 });

    const calls = readFileSync(log, 'utf8');
    expect(calls).toMatch(/ARGV clone /);
    expect(calls).toMatch(/ARGV push /);
    expect(
      calls
        .split('\n')
        .filter((l) => l.startsWith('ARGV'))
        .join('\n'),
    ).not.toContain(TOKEN);
    // The header is there for clone and push, and only for remote commands.
    const blocks = calls.split(/(?=^ARGV )/m);
    for (const b of blocks) {
      const remote = /^ARGV (clone|fetch|push|ls-remote) /.test(b);
      expect(b.includes(TOKEN), b.split('\n')[0]).toBe(remote);
    }
    expect(readFileSync(join(ws.dir, '.git', 'config'), 'utf8')).not.toContain(TOKEN);
  });
});
