#!/usr/bin/env node
import { EXIT } from '../goal/result.js';
import { main } from './cli.js';
import { redactUrls } from '../workspace/remote-auth.js';

// Services exit once their orderly shutdown is done, whatever client timers are still armed.
const SERVICES = new Set(['serve', 'worker']);
const argv = process.argv.slice(2);

main(argv).then(
  (code) => {
    process.exitCode = code;
    if (SERVICES.has(argv[0] ?? '')) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`goal-loop: ${redactUrls(String(err))}\n`);
    process.exitCode = EXIT.internal;
    if (SERVICES.has(argv[0] ?? '')) process.exit(EXIT.internal); // no half-started service left listening
  },
);
