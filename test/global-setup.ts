import { execFileSync } from 'node:child_process';

/** CLI tests run the built `goal-loop` binary as a real process: build it once, fresh. */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
