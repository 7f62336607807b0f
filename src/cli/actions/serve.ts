import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../common/errors.js';
import { GoalLoopOctokit } from '../../github/octokit.js';
import { startServer, webhookSecretProblem } from '../../github/server/serve.js';
import { runSetupFlow } from '../../github/server/setup-flow.js';
import { loadDotEnv, missingAppCredentials, readDotEnv } from '../dotenv.js';
import { createLogger } from '../logging.js';
import { jailStatus, runService } from '../service.js';
import { packageDir } from '../version.js';

export async function serveCommand(): Promise<number> {
  const env = process.env;
  // Before anything reads a variable: the setup flow leaves the credentials in ./.env.
  loadDotEnv(process.cwd(), env);
  // One logger for the process (ours: JSON on stderr, URL credentials masked), Probot's included.
  const logger = createLogger(env.LOG_LEVEL ?? 'info');
  const missing = missingAppCredentials(env);
  const names = `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'}`;
  if (missing.length > 0 && missingAppCredentials({ ...env, ...readDotEnv(process.cwd()) }).length === 0) {
    // .env has them but the environment sets them empty (and wins). Probot's setup flow would read
    // .env over the environment and start an app with no handlers; say what is wrong instead.
    throw new InputError(`serve refuses to start: ${names} set but empty in the environment, which wins over ./.env: unset ${missing.length > 1 ? 'them' : 'it'}`);
  }
  if (missing.length > 0) {
    if (env.NODE_ENV === 'production') {
      // The setup flow is a development aid; in production a missing credential is a config error.
      throw new InputError(
        `serve refuses to start: ${names} not set (NODE_ENV=production; set APP_ID and PRIVATE_KEY or PRIVATE_KEY_PATH, or register the app with the setup flow outside production)`,
      );
    }
    // Probot's setup flow reads ./app.yml; without it the app it registers has no permissions
    // and no events, and nothing says so.
    if (!existsSync(join(process.cwd(), 'app.yml'))) {
      throw new InputError(
        `serve cannot start the setup flow here: ${names} not set, and the flow registers the app from ./app.yml, which is not in ${process.cwd()}: run it where goal-loop's app.yml is (cp ${join(packageDir().dir, 'app.yml')} .), or register the app by hand (README, "Register the app")`,
      );
    }
    logger.warn(`${missing.join(' and ')} not set: starting the setup flow (open the printed URL to register the app from app.yml, then restart)`);
    // In setup mode Probot serves only its registration pages. Probot's run() also reads .env,
    // overriding the environment: should that give it credentials we did not see (a variable set
    // but empty here), it would start an app with no handlers. Refuse that instead.
    await runSetupFlow(
      () => {
        throw new Error('the environment blanks APP_ID or PRIVATE_KEY that .env sets: unset them (or fix .env) and restart');
      },
      { env, Octokit: GoalLoopOctokit, log: logger },
    );
    return new Promise<number>(() => undefined); // the setup server runs until the process is stopped
  }
  const secretProblem = webhookSecretProblem(env.WEBHOOK_SECRET);
  // One line, no usage text: the fix is in the environment, not the command line.
  if (secretProblem) throw new InputError(`serve refuses to start: ${secretProblem}`);
  const jail = await jailStatus();
  return runService(
    env,
    logger,
    (common) =>
      startServer({
        ...common,
        role: common.store.kind === 'postgres' ? 'webhooks' : 'both',
        jail,
        probotOverrides: { overrides: { log: logger } },
      }),
    'shutting down: no new work; running goals get 10 s, then another worker (or the next start) resumes them',
  );
}
