import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Git } from '../../src/workspace/git.js';
import { SetupOutput } from '../../src/workspace/setup-output.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

/** A repository after setup: untracked folders (one holding an ignored file), an ignored folder and ignored files. */
async function afterSetup(): Promise<string> {
  const dir = await tempDir();
  git(dir, 'init', '-q');
  await writeFile(join(dir, '.gitignore'), '*.log\n/cache/\n');
  await writeFile(join(dir, 'README.md'), 'x\n');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=a', '-c', 'user.email=a@a', 'commit', '-qm', 'seed');
  for (const d of ['node_modules/dep', 'vendor/lib', 'cache']) await mkdir(join(dir, d), { recursive: true });
  await writeFile(join(dir, 'node_modules', 'dep', 'index.js'), 'x');
  await writeFile(join(dir, 'node_modules', 'dep', 'build.log'), 'x');
  await writeFile(join(dir, 'vendor', 'lib', 'a.js'), 'x');
  await writeFile(join(dir, 'vendor', 'lib', 'a.log'), 'x');
  await writeFile(join(dir, 'cache', 'blob'), 'x');
  await writeFile(join(dir, 'setup.log'), 'x');
  return dir;
}

const seen = (o: SetupOutput) => ({ paths: [...o.paths].sort(), keep: [...o.keep].sort(), excludes: o.excludes(true).sort(), untracked: o.untrackedDirs().sort() });

describe('SetupOutput.record', () => {
  it('reads the same with any guess of the untracked folders as without one: right, wrong, partial or absent', async () => {
    const dir = await afterSetup();
    const base = new SetupOutput(new Git(), dir);
    await base.record();
    expect(seen(base)).toEqual({
      paths: ['cache/', 'node_modules/', 'setup.log', 'vendor/'],
      keep: ['/cache/', '/node_modules/', '/setup.log', '/vendor/'],
      excludes: [':(exclude,literal)node_modules', ':(exclude,literal)vendor'],
      untracked: ['node_modules/', 'vendor/'],
    });
    for (const guess of [['node_modules'], ['node_modules', 'vendor'], ['cache'], ['node_modules', 'cache'], ['gone'], ['setup.log'], ['vendor/lib']]) {
      const o = new SetupOutput(new Git(), dir);
      await o.record(guess);
      expect(seen(o), guess.join(',')).toEqual(seen(base));
    }
  });
});
