import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
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
