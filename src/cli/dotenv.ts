import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Loads `<cwd>/.env` (where Probot's setup flow writes the app's credentials) into `env`,
 * adding only the variables `env` does not already have: the environment always wins.
 * (`process.loadEnvFile` has not kept one precedence across Node releases; parsing and merging
 * here does.) Returns the file's path if it was read, undefined if there is none.
 */
export function loadDotEnv(cwd: string = process.cwd(), env: NodeJS.ProcessEnv = process.env): string | undefined {
  const values = readDotEnv(cwd);
  if (!values) return undefined;
  for (const [key, value] of Object.entries(values)) {
    if (env[key] === undefined && value !== undefined) env[key] = value;
  }
  return join(cwd, '.env');
}

/** The variables `<cwd>/.env` sets, or undefined if there is no such file. */
export function readDotEnv(cwd: string = process.cwd()): NodeJS.Dict<string> | undefined {
  try {
    return parseEnv(readFileSync(join(cwd, '.env'), 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** What is missing for the process to act as the GitHub App (empty when nothing is). */
export function missingAppCredentials(env: NodeJS.ProcessEnv): string[] {
  const missing: string[] = [];
  if (!env.APP_ID) missing.push('APP_ID');
  if (!(env.PRIVATE_KEY || env.PRIVATE_KEY_PATH)) missing.push('PRIVATE_KEY (or PRIVATE_KEY_PATH)');
  return missing;
}
