import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSampleRepo, SAMPLE_FILES } from '../../src/demo/sample-repo.js';
import { DEFAULT_WARM_MIN_FILES } from '../../src/workspace/mirror-cache.js';
import { tempDir } from './temp.js';

/** A sample repository, a goal file and the environment a `goal-loop` process needs to run it in its own folder. */
export async function cliProject(goalYaml: string, files?: Record<string, string>) {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'), files);
  const goal = join(root, 'goal.yml');
  await writeFile(goal, goalYaml);
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, goal, env };
}

/** The sample's files plus enough small ones that a released tree is worth parking (see DEFAULT_WARM_MIN_FILES). */
export function parkableFiles(): Record<string, string> {
  const files: Record<string, string> = { ...SAMPLE_FILES };
  for (let i = 0; i < DEFAULT_WARM_MIN_FILES; i++) files[`fixtures/f${i % 20}/file-${i}.txt`] = `fixture ${i}\n`;
  return files;
}
