#!/usr/bin/env node
// A leaf module (no imports, no side effects): the only one evaluated before the title is rewritten.
import { redactUrls } from '../common/redact-urls.js';

// First of all: a password on the command line (`--repo https://user:token@host/…`) shows in
// /proc/<pid>/cmdline and `ps` until the process title is rewritten, which on Linux overwrites
// the original argv in place. So it is rewritten before the rest of the program is even loaded.
const argv = process.argv.slice(2);
const shown = argv.map(redactUrls);
if (shown.some((a, i) => a !== argv[i])) process.title = ['goal-loop', ...shown].join(' ');

const [{ EXIT }, { main }] = await Promise.all([import('../goal/result.js'), import('./cli.js')]);

// Services exit once their orderly shutdown is done, whatever client timers are still armed.
const SERVICES = new Set(['serve', 'worker']);

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
