import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { CLI, type CliResult, runCli } from '../helpers/cli.js';
import { FakeAnthropic, reply, toolUse } from '../helpers/fake-anthropic.js';
import { connectGoalLoop } from '../helpers/mcp-client.js';
import { tempDir } from '../helpers/temp.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const DEMO_GOAL = fileURLToPath(new URL('../../examples/demo-goal.yml', import.meta.url));
const COMMANDS = ['run', 'plan', 'status', 'logs', 'show', 'clean', 'serve', 'worker', 'action', 'mcp', 'demo'];

/**
 * The CLI with stdin left open (as an MCP client or a terminal would), no app credentials and a
 * ledger path of its own; killed after `ms` if it has not exited (a help that started the command).
 */
async function cliWithOpenStdin(args: string[], ms = 15_000): Promise<CliResult & { ledger: string; timedOut: boolean }> {
  const root = await tempDir();
  const ledger = join(root, 'ledger.db');
  const env = { ...process.env, LOG_LEVEL: 'info' as const, NO_COLOR: '1', APP_ID: '', PRIVATE_KEY: '', PRIVATE_KEY_PATH: '', WEBHOOK_SECRET: '', DATABASE_URL: '', GOAL_LOOP_DB: ledger };
  const child = spawn(process.execPath, [CLI, ...args], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, ms);
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s })));
  clearTimeout(timer);
  child.stdin.destroy();
  return { code, signal, stdout, stderr, ledger, timedOut };
}

describe('goal-loop --help and --version', () => {
  it.each(COMMANDS)('%s --help prints its usage, flags and an example on stdout, exits 0, and starts nothing', async (name) => {
    for (const flag of ['--help', '-h']) {
      const r = await cliWithOpenStdin([name, flag]);
      expect(r.timedOut, `${name} ${flag} did not exit`).toBe(false);
      expect(r.stderr).toBe(''); // no Probot setup flow, no "MCP server ready", no logs
      expect(r.code).toBe(0);
      const lines = r.stdout.split('\n');
      expect(lines.some((l) => l.startsWith(`usage: goal-loop ${name}`))).toBe(true);
      expect(lines.some((l) => l.startsWith('Example'))).toBe(true);
      expect(r.stdout).toMatch(/^ {2}-h, --help +\S/m);
      expect(r.stdout).toMatch(/^ {2}-V, --version +\S/m);
      expect(existsSync(r.ledger), `${name} ${flag} opened the ledger`).toBe(false);
    }
  });

  it('the help wins over the other flags, even ones that would be refused', async () => {
    const r = await cliWithOpenStdin(['run', '--repo', '/nonexistent', '--bogus', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: goal-loop run /m);
    expect(r.stderr).toBe('');
  });

  it('goal-loop --help, -h and help print the overview with every command on one line; help <command> prints its help', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(/^usage: goal-loop <command>/);
      // Each command: its name (and argument), then what it does, on the one line.
      for (const name of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^ {2}${name}(?: <[a-z-]+>| \\[[a-z-]+\\])? {2,}[a-z]\\S* \\S.*\\n {2}[a-z]`, 'm'));
      expect(r.stdout).toMatch(/^Example/m);
      expect(r.stdout).toMatch(/--version/);
    }
    const one = await runCli(['help', 'plan']);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^usage: goal-loop plan /);
    expect(one.stdout).not.toMatch(/^usage: goal-loop run /m);
    const unknown = await runCli(['help', 'frobnicate']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it('a mistyped command or flag: one line with the nearest name and where the help is, not the whole usage', async () => {
    const cases: [string[], RegExp][] = [
      [['rnu'], /^goal-loop: unknown command 'rnu' \(did you mean run\?\) \(see `goal-loop --help`\)$/],
      [['help', 'stauts'], /^goal-loop: unknown command 'stauts' \(did you mean status\?\) \(see `goal-loop --help`\)$/],
      [['run', '--hepl'], /^goal-loop run: unknown option '--hepl' \(did you mean --help\?\) \(see `goal-loop run --help`\)$/],
      [['status', '--jsn'], /^goal-loop status: unknown option '--jsn' \(did you mean --json\?\) \(see `goal-loop status --help`\)$/],
      // The typo is named even though the required flags are missing too.
      [['run', '--goal', 'g.yml', '--rpeo', 'x'], /^goal-loop run: unknown option '--rpeo' \(did you mean --repo\?\)/],
      [['frobnicate'], /^goal-loop: unknown command 'frobnicate' \(see `goal-loop --help`\)$/],
    ];
    for (const [args, line] of cases) {
      const r = await cliWithOpenStdin(args);
      expect(r.timedOut).toBe(false);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr.trimEnd(), args.join(' ')).toMatch(line);
    }
  });

  it('a missing required flag or argument, or a value the flag does not take: one line naming it, exit 1', async () => {
    const cases: [string[], string][] = [
      [['run', '--goal', 'g.yml'], `goal-loop run: required option '--repo <path|url>' not specified (see \`goal-loop run --help\`)`],
      [['run', '--repo', '.'], `goal-loop run: required option '--goal <file>' not specified (see \`goal-loop run --help\`)`],
      [['logs'], `goal-loop logs: missing required argument 'goal-id' (see \`goal-loop logs --help\`)`],
      [
        ['run', '--repo', '.', '--goal', 'g.yml', '--agent', 'gpt'],
        `goal-loop run: option '--agent <agent>' argument 'gpt' is invalid. Allowed choices are auto, scripted, claude (see \`goal-loop run --help\`)`,
      ],
    ];
    for (const [args, line] of cases) {
      const r = await cliWithOpenStdin(args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`${line}\n`);
      expect(existsSync(r.ledger), `${args.join(' ')} opened the ledger`).toBe(false);
    }
  });

  it('--version and -V print the version from package.json, for goal-loop and for every command', async () => {
    for (const args of [['--version'], ['-V'], ['run', '--version'], ['serve', '-V'], ['mcp', '--version']]) {
      const r = await cliWithOpenStdin(args);
      expect(r.timedOut).toBe(false);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${VERSION}\n`);
      expect(r.stderr).toBe('');
    }
  });

  it('an unknown flag still exits 1, with one clear line on stderr naming the flag and the help', async () => {
    for (const name of COMMANDS) {
      const r = await cliWithOpenStdin([name, '--bogus']);
      expect(r.timedOut).toBe(false);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`unknown option '--bogus'`);
      expect(r.stderr).toContain(`goal-loop ${name} --help`);
    }
  });

  it('every flag the help lists is one the command accepts, and every flag it accepts is listed, in its usage line too', async () => {
    const { buildProgram } = await import('../../src/cli/program.js');
    const program = buildProgram(() => undefined);
    expect(program.commands.map((c) => c.name()).filter((n) => n !== 'help')).toEqual(COMMANDS);
    for (const cmd of program.commands.filter((c) => c.name() !== 'help')) {
      const name = cmd.name();
      const help = cmd.helpInformation();
      const options = help.slice(help.indexOf('\nOptions:\n'));
      const listed = [...options.matchAll(/^ {2}(?:-[a-zA-Z], )?(--[a-z-]+)/gm)].map((m) => m[1]!).sort();
      const accepted = [...cmd.options.map((o) => o.long!), '--help'].sort();
      expect(listed, name).toEqual(accepted);
      // The usage line names the same flags.
      const usage = help.slice(0, help.indexOf('\n\n'));
      expect(usage, name).toMatch(new RegExp(`^usage: goal-loop ${name}\\b`));
      for (const flag of listed.filter((f) => f !== '--help' && f !== '--version')) expect(usage, `${name} usage`).toContain(flag);
      // And each parses, alone (only the required flags may be missing).
      for (const flag of listed.filter((f) => f !== '--help' && f !== '--version')) {
        const option = cmd.options.find((o) => o.long === flag)!;
        const value = option.argChoices?.[0] ?? (option.required ? '1' : undefined);
        const probe = buildProgram(() => undefined);
        const target = probe.commands.find((c) => c.name() === name)!;
        target.action(() => undefined); // parse only
        const args = [name, ...(name === 'logs' || name === 'show' ? ['g'] : []), flag, ...(value !== undefined ? [value] : [])];
        const error = await probe.parseAsync(args, { from: 'user' }).then(
          () => undefined,
          (e: unknown) => e as { code?: string },
        );
        // Nothing refused, or only the required flags left out.
        expect([undefined, 'commander.missingMandatoryOptionValue'], `${args.join(' ')}: ${String(error)}`).toContain(error?.code);
      }
    }
  });
});

describe('what --help says is true', () => {
  it('mcp --help names every tool and every resource the MCP server offers', async () => {
    const root = await tempDir();
    const help = await runCli(['mcp', '--help']);
    const mcp = await connectGoalLoop({ env: { GOAL_LOOP_DB: join(root, 'ledger.db'), DATABASE_URL: '' } });
    const { tools } = await mcp.client.listTools();
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    await mcp.close();
    expect(tools.length).toBeGreaterThan(0);
    for (const t of tools) expect(help.stdout, `tool ${t.name}`).toContain(t.name);
    expect(resourceTemplates.length).toBeGreaterThan(0);
    for (const r of resourceTemplates) expect(help.stdout, `resource ${r.uriTemplate}`).toContain(r.uriTemplate.replace('{goal_id}', '<goal_id>'));
  });

  it('the overview gives exit 3 for a goal waiting for an approval too, as run exits', async () => {
    const r = await runCli(['--help']);
    const exit = /^Exit codes:[\s\S]*?(?=\n\n)/m.exec(r.stdout)?.[0].replace(/\s+/g, ' ');
    expect(exit).toMatch(/\b3 stopped \(by a safeguard[^)]*\),? paused,? or waiting for an approval\b/);
  });

  it("the logs example names the demo's goal and one of its tasks", async () => {
    const { loadGoalSpecFile } = await import('../../src/goal/parse.js');
    const demo = await loadGoalSpecFile(DEMO_GOAL);
    const example = /^Example:\n {2}(.*)$/m.exec((await runCli(['logs', '--help'])).stdout)?.[1] ?? '';
    expect(example).toMatch(new RegExp(`^goal-loop logs ${demo.goal_id} `));
    const task = /--task (\S+)/.exec(example)?.[1];
    expect(demo.tasks.map((t) => t.id)).toContain(task);
  });
});

describe('goal-loop plan --config', () => {
  it('accepts a repo config with a goal file, and names the file when the config is invalid', async () => {
    const root = await tempDir();
    const good = join(root, 'good.yml');
    await writeFile(good, 'max_retries: 2\nmodel: claude-test-model\n');
    const ok = await runCli(['plan', '--goal', DEMO_GOAL, '--config', good]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('goal: demo-slugify');

    const bad = join(root, 'bad.yml');
    await writeFile(bad, 'max_retries: 2\ncolour: blue\n');
    const r = await runCli(['plan', '--goal', DEMO_GOAL, '--config', bad]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(bad);
    expect(r.stderr).toMatch(/unknown key colour/);

    const missing = await runCli(['plan', '--goal', DEMO_GOAL, '--config', join(root, 'nope.yml')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/nope\.yml: file not found/);
  });

  it('plan --issue gives Claude the model of the --config file', async () => {
    const root = await tempDir();
    const repo = await createSampleRepo(join(root, 'sample'));
    const issue = join(root, 'add-farewell.md');
    await writeFile(issue, 'Please add a farewell(name) function next to greet.\n');
    const config = join(root, 'goal-loop.yml');
    await writeFile(config, 'model: claude-from-config\n');
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    fake.push(reply([toolUse('submit_goal_spec', { objective: 'Add farewell(name)', tasks: [{ id: 'farewell', title: 'Add farewell', verification: 'node --test' }] })]));
    const r = await runCli(['plan', '--repo', repo.bare, '--issue', issue, '--config', config], { ...fake.env() } as Record<string, string>);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.code).toBe(0);
    expect(fake.requests).toHaveLength(1);
    expect((fake.requests[0]!.body as { model?: string }).model).toBe('claude-from-config');
  });
});
