import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { shellWord } from '../common/shell-word.js';
import { SandboxUnavailableError } from '../ports/sandbox.js';
import { selectSandbox } from '../sandbox/select-sandbox.js';
import { createSampleRepo } from './sample-repo.js';

export interface DemoOptions {
  /** The CLI's main.js, which runs the goal. */
  cli: string;
  /** How the printed commands name the CLI (`goal-loop`, or `node /path/to/main.js`). */
  prog: string;
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
}

/**
 * `goal-loop demo` (`npm run demo`): a real goal, end to end, against a fresh sample repository.
 * Everything it makes (the repository, its own ledger, the workspaces) stays in one temporary
 * folder that it names at the end, so the commands it prints work as printed, and the user's
 * own ledger never gets a goal on a repository that a reboot deletes.
 */
export async function runDemo(opts: DemoOptions): Promise<number> {
  const out = opts.out ?? process.stdout;
  const err = opts.err ?? process.stderr;
  const root = await mkdtemp(join(tmpdir(), 'goal-loop-demo-'));
  const repo = await createSampleRepo(join(root, 'sample'));
  const goal = fileURLToPath(new URL('../../../examples/demo-goal.yml', import.meta.url));
  const db = join(root, 'ledger.db');
  const env: NodeJS.ProcessEnv = { ...process.env, GOAL_LOOP_DB: db, GOAL_LOOP_WORKSPACES: join(root, 'workspaces') };
  // Its own SQLite ledger even where DATABASE_URL names a shared one.
  delete env.DATABASE_URL;
  err.write(`sample repository: ${repo.bare}\ngoal: ${goal}\n\n`);
  const extra = await sandboxFallback(root, err);

  // --json: the run's own hints would name the default ledger; the demo prints its own below.
  const run = spawnSync(process.execPath, [opts.cli, 'run', '--repo', repo.bare, '--goal', goal, '--agent', 'scripted', '--json', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    env,
  });
  const log = spawnSync('git', ['--git-dir', repo.bare, 'log', '--format=%h %s%n%(trailers:key=Goal-Task,key=Goal-Attempt,key=Goal-Verified)', 'goal/demo-slugify'], { encoding: 'utf8' });
  const ledger = `GOAL_LOOP_DB=${shellWord(db)} ${opts.prog}`;
  out.write(
    `\nThe checkpoints are on branch goal/demo-slugify of ${repo.bare}:\n\n${log.stdout}` +
      `Look at them:   git --git-dir ${shellWord(repo.bare)} log --stat goal/demo-slugify\n` +
      `Each attempt:   ${ledger} logs demo-slugify\n` +
      `The goal:       ${ledger} status\n` +
      `The demo keeps its repository, ledger and workspaces in ${root}; when done: rm -rf ${shellWord(root)}\n`,
  );
  return run.status ?? 4;
}

/** The demo runs in the bubblewrap jail; on a machine without it, in the warned process fallback. */
async function sandboxFallback(root: string, err: NodeJS.WritableStream): Promise<string[]> {
  try {
    await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) });
    return [];
  } catch (e) {
    if (!(e instanceof SandboxUnavailableError)) throw e;
    err.write(`NOTE: ${e.message.split('\n')[0]}\nThe demo runs without the jail (sandbox: process). Install bubblewrap to see the real sandbox.\n\n`);
    const config = join(root, 'goal-loop.yml');
    await writeFile(config, 'sandbox: process\n');
    return ['--config', config];
  }
}
