#!/usr/bin/env node
import { EXIT } from '../loop/result.js';
import { main } from './cli.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`goal-loop: ${String(err)}\n`);
    process.exitCode = EXIT.internal;
  },
);
