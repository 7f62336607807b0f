import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shellWord } from '../common/shell-word.js';

/** This CLI's main.js (built: dist/src/cli/main.js). */
export const CLI_MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

/**
 * How a person at a shell runs this very CLI, for the commands it prints: `goal-loop` when the
 * first `goal-loop` the shell would run from their PATH is this file, else `node <path to main.js>`. PATH entries that
 * npm adds for its scripts and `npx` (…/node_modules/.bin) are not the user's shell's.
 */
export function cliInvocation(env: NodeJS.ProcessEnv = process.env, main: string = CLI_MAIN): string {
  const self = real(main);
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir || /node_modules[\\/]\.bin[\\/]?$/.test(dir)) continue;
    const found = executable(join(dir, 'goal-loop'));
    if (found) return found === self ? 'goal-loop' : `node ${shellWord(main)}`;
  }
  return `node ${shellWord(main)}`;
}

/** The real path of `path` when the shell could run it. */
function executable(path: string): string | undefined {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return undefined;
  }
  return real(path);
}

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
