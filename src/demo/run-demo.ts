import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';
import { createSampleRepo } from './sample-repo.js';

/** `npm run demo`: a real goal, end to end, against a fresh sample repository. */
async function demo(): Promise<number> {
  const root = await mkdtemp(join(tmpdir(), 'goal-loop-demo-'));
  const repo = await createSampleRepo(join(root, 'sample'));
  const goal = fileURLToPath(new URL('../../../examples/demo-goal.yml', import.meta.url));
  const cli = fileURLToPath(new URL('../cli/main.js', import.meta.url));
  const env = { ...process.env, GOAL_LOOP_DB: join(root, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  process.stderr.write(`sample repository: ${repo.bare}\ngoal: ${goal}\n\n`);
  const extra = await sandboxFallback(root);

  const run = spawnSync(process.execPath, [cli, 'run', '--repo', repo.bare, '--goal', goal, '--agent', 'scripted', ...extra], { stdio: 'inherit', env });
  const log = spawnSync('git', ['--git-dir', repo.bare, 'log', '--format=%h %s%n%(trailers:key=Goal-Task,key=Goal-Attempt)', 'goal/demo-slugify'], {
    encoding: 'utf8',
  });
  process.stdout.write(
    `\nThe checkpoints are on branch goal/demo-slugify of ${repo.bare}:\n\n${log.stdout}` +
      `Look at them:  git --git-dir ${repo.bare} log --stat goal/demo-slugify\n` +
      `Ledger:        GOAL_LOOP_DB=${env.GOAL_LOOP_DB} node ${cli} status\n`,
  );
  return run.status ?? 4;
}

/** The demo runs in the bubblewrap jail; on a machine without it, in the warned process fallback. */
async function sandboxFallback(root: string): Promise<string[]> {
  try {
    await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) });
    return [];
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError)) throw err;
    process.stderr.write(`NOTE: ${err.message.split('\n')[0]}\nThe demo runs without the jail (sandbox: process). Install bubblewrap to see the real sandbox.\n\n`);
    const config = join(root, 'goal-loop.yml');
    await writeFile(config, 'sandbox: process\n');
    return ['--config', config];
  }
}

demo().then((code) => {
  process.exitCode = code;
});
