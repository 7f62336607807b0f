import { readActionContext } from '../../action/context.js';
import { reportAction } from '../../action/report-action.js';
import { actionOctokit, openActionStore, runAction } from '../../action/run-action.js';
import { maskCommand } from '../../action/workflow-commands.js';
import { createLogger } from '../logging.js';

/** `goal-loop action`: one workflow run; the job summary, outputs and annotations are written whatever happened. */
export async function actionCommand(): Promise<number> {
  const env = process.env;
  const ctx = await readActionContext(env);
  // The runner masks secrets it knows; a token from an earlier step may not be one of them.
  process.stdout.write(`${maskCommand(ctx.inputs.githubToken)}\n`);
  if (ctx.inputs.anthropicApiKey) process.stdout.write(`${maskCommand(ctx.inputs.anthropicApiKey)}\n`);
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  const store = await openActionStore(ctx);
  try {
    const o = actionOctokit(ctx, env, logger);
    const outcome = await runAction(ctx, store, o, { logger, env }).catch((err: unknown) => {
      logger.error({ err }, 'goal-loop action failed');
      return { exitCode: 1, error: (err as Error).message };
    });
    await reportAction(ctx, store, outcome, (line) => process.stdout.write(`${line}\n`), o);
    return outcome.exitCode;
  } finally {
    await store.close();
  }
}
