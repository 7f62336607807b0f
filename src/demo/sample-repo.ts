import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Git } from '../workspace/git.js';

export interface SampleRepo {
  /** Bare repository: the "remote" goal-loop clones and pushes to. */
  bare: string;
  /** The seeding clone (the user's own working copy). */
  work: string;
}

const git = new Git({ identity: { name: 'Sample Author', email: 'author@example.com' } });

/** Creates a bare repository seeded with the given files in one commit on `main`. */
export async function createSampleRepo(root: string, files: Record<string, string> = SAMPLE_FILES): Promise<SampleRepo> {
  const bare = join(root, 'origin.git');
  const work = join(root, 'work');
  await mkdir(root, { recursive: true });
  await git.run(root, ['init', '--quiet', '--bare', '--initial-branch=main', bare]);
  await git.run(root, ['init', '--quiet', '--initial-branch=main', work]);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(work, path, '..'), { recursive: true });
    await writeFile(join(work, path), content);
  }
  await git.run(work, ['add', '--all']);
  await git.run(work, ['commit', '--quiet', '-m', 'Initial commit']);
  await git.run(work, ['remote', 'add', 'origin', bare]);
  await git.run(work, ['push', '--quiet', 'origin', 'main']);
  return { bare, work };
}

export const SAMPLE_FILES: Record<string, string> = {
  'package.json': `${JSON.stringify({ name: 'sample-lib', version: '1.0.0', type: 'module', scripts: { test: 'node --test' } }, null, 2)}\n`,
  'README.md': '# sample-lib\n\nA tiny library that goal-loop works on in the demo.\n',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the sample repository's JavaScript, a template literal as text
  'src/index.js': 'export const greet = (name) => `Hello, ${name}!`;\n',
  'test/index.test.js':
    "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { greet } from '../src/index.js';\n\ntest('greet', () => assert.equal(greet('Ada'), 'Hello, Ada!'));\n",
};
