import { runDemo } from '../../demo/demo.js';
import { CLI_MAIN, cliInvocation } from '../invocation.js';

export function demoCommand(): Promise<number> {
  return runDemo({ cli: CLI_MAIN, prog: cliInvocation() });
}
