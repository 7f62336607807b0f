import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const SECRET = 'S3cretPassw0rd';

/**
 * Runs the built CLI with a module hook that reads /proc/self/cmdline at the moment the entry
 * point asks for `./cli.js` (the rest of the program: probot, pino, the stores), and again when
 * the process exits. Returns what each read showed.
 */
async function cmdlineWhileLoading(args: string[]): Promise<{ atLoad: string; atExit: string; code: number | null }> {
  const dir = await tempDir();
  const out = join(dir, 'probe.txt');
  await writeFile(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync, readFileSync } from 'node:fs';
     export async function resolve(specifier, context, next) {
       if (specifier === './cli.js') appendFileSync(${JSON.stringify(out)}, 'load ' + readFileSync('/proc/self/cmdline', 'latin1').replace(/\\0/g, ' ') + '\\n');
       return next(specifier, context);
     }`,
  );
  await writeFile(
    join(dir, 'register.mjs'),
    `import { register } from 'node:module';
     import { appendFileSync, readFileSync } from 'node:fs';
     register(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});
     process.on('exit', () => appendFileSync(${JSON.stringify(out)}, 'exit ' + readFileSync('/proc/self/cmdline', 'latin1').replace(/\\0/g, ' ') + '\\n'));`,
  );
  const child = spawn(process.execPath, ['--import', pathToFileURL(join(dir, 'register.mjs')).href, CLI, ...args], {
    cwd: dir,
    env: { ...process.env, GOAL_LOOP_DB: join(dir, 'ledger.db'), GOAL_LOOP_WORKSPACES: join(dir, 'ws'), LOG_LEVEL: 'silent' },
    stdio: 'ignore',
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const probe = await readFile(out, 'utf8');
  const line = (tag: string) => probe.split('\n').find((l) => l.startsWith(`${tag} `)) ?? '';
  return { atLoad: line('load'), atExit: line('exit'), code };
}

describe('a password on the command line', () => {
  it('attack: is gone from /proc/<pid>/cmdline before the program is even loaded', async () => {
    const r = await cmdlineWhileLoading(['status', '--repo', `https://alice:${SECRET}@127.0.0.1:9/o/r.git`]);
    expect(r.atLoad).toMatch(/^load goal-loop status --repo https:\/\/\*\*\*@127\.0\.0\.1:9\/o\/r\.git/);
    expect(r.atLoad).not.toContain(SECRET);
    expect(r.atExit).toMatch(/^exit goal-loop/);
    expect(r.atExit).not.toContain(SECRET);
  });

  it('a command line with no credentials keeps its title', async () => {
    const r = await cmdlineWhileLoading(['status', '--repo', 'https://127.0.0.1:9/o/r.git']);
    expect(r.atLoad).toContain('status --repo https://127.0.0.1:9/o/r.git');
    expect(r.atLoad).toContain(CLI);
  });
});

describe('a password in a command line the parser refuses', () => {
  // Commander quotes what it refuses: an unknown command, an unknown flag, a value not allowed.
  const url = `https://alice:${SECRET}@127.0.0.1:9/o/r.git`;
  it.each([
    ['an unknown command', [url]],
    ['help with an unknown command', ['help', url]],
    ['an unknown flag with its value', ['run', `--rpeo=${url}`, '--goal', 'g.yml']],
    ['a value outside the choices', ['run', '--repo', url, '--goal', 'g.yml', '--agent', url]],
    ['a value its parser refuses', ['run', '--repo', url, '--goal', 'g.yml', '--budget', url]],
    ['a whole number that is a URL', ['logs', 'g', '--attempt', url]],
    ['too many arguments', ['logs', 'g', url]],
    ['an argument where none is taken', ['status', url]],
  ])('attack: %s is refused (exit 1) and the password is masked', async (_, args) => {
    const r = await runCli(args, { GOAL_LOOP_DB: join(await tempDir(), 'ledger.db') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^goal-loop/);
    expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
  });

  it('the masked value is still shown, so the person sees what was refused', async () => {
    const r = await runCli(['run', '--repo', '.', '--goal', 'g.yml', '--agent', url]);
    expect(r.stderr).toContain(`argument 'https://***@127.0.0.1:9/o/r.git' is invalid`);
  });
});
