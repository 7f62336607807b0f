import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { tempDir } from './temp.js';

/** A sample repository, a ledger and workspaces in a temp dir, a repo config file, and the server's argv. */
export async function mcpProject(config = 'sandbox: process\n') {
  const root = await tempDir();
  const repo = await createSampleRepo(join(root, 'sample'));
  const configFile = join(root, 'goal-loop.yml');
  await writeFile(configFile, config);
  const env = { GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  return { root, repo, configFile, env, args: ['--repo', repo.bare, '--config', configFile] };
}
