import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { type Fence, parseMarkdown, ROOT, readDoc } from './markdown.js';

/**
 * The commands the documents print, run as printed. A ```console block right after the comment
 * `<!-- checked-commands -->` is a session: `$ ` lines are commands, run in order from the
 * checkout's root (`cd` moves the session), with goal-loop installed as `npm link` installs it (a
 * global prefix of the session's own whose `bin/goal-loop` and `lib/node_modules/goal-loop` link
 * to the built checkout) and a fresh ledger and cache of their own; the other lines are output the command must print (`…` stands for any text, a line of
 * `…` alone for lines left out). A command exits 0 unless it ends with `# exit N`.
 * Every offline `goal-loop` command the documents print must be in such a block.
 */

const MARKER = '<!-- checked-commands -->';
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface Step {
  command: string;
  exit: number;
  expect: string[];
  line: number;
}

interface Session {
  doc: string;
  line: number;
  steps: Step[];
}

function sessions(): Session[] {
  const out: Session[] = [];
  for (const doc of DOCS) {
    for (const fence of parseMarkdown(readDoc(doc)).fences) {
      if (fence.before !== MARKER) continue;
      expect(fence.lang, `${doc}:${fence.no}: a checked block is a console block`).toBe('console');
      out.push({ doc, line: fence.no, steps: steps(doc, fence) });
    }
  }
  return out;
}

function steps(doc: string, fence: Fence): Step[] {
  const out: Step[] = [];
  for (const { no, text } of fence.body) {
    const cmd = /^\$ (.*)$/.exec(text);
    if (cmd) {
      const exit = /\s#\s*exit (\d+)\s*$/.exec(cmd[1]!);
      out.push({ command: cmd[1]!, exit: exit ? Number(exit[1]) : 0, expect: [], line: no });
    } else if (text.trim()) {
      expect(out.length, `${doc}:${no}: output before any command`).toBeGreaterThan(0);
      out.at(-1)!.expect.push(text);
    }
  }
  return out;
}

/** `npm run <script>` runs the script from package.json, minus the build: the tests built dist/ already. */
function shellCommand(command: string): string {
  const npm = /^npm run (\S+)(.*)$/.exec(command);
  if (!npm) return command;
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const script = scripts[npm[1]!];
  expect(script, `package.json has no script ${npm[1]}`).toBeDefined();
  return `${script!.replace(/^npm run build --silent && /, '')}${npm[2]}`;
}

function matches(expected: string, actual: string[]): boolean {
  const pattern = new RegExp(
    `^${expected
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return actual.some((line) => pattern.test(line.trimEnd()));
}

async function runStep(step: Step, env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number | null; lines: string[]; text: string; stdout: string }> {
  const child = spawn('sh', ['-c', shellCommand(step.command)], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, lines: [...stdout.split('\n'), ...stderr.split('\n')], text: `${stdout}\n--- stderr ---\n${stderr}`, stdout };
}

/** goal-loop installed as `npm link` does (in a prefix of the session's own), and nothing of the developer's or the test run's state. */
async function sessionEnv(): Promise<NodeJS.ProcessEnv> {
  const root = await tempDir();
  const prefix = join(root, 'prefix');
  mkdirSync(join(prefix, 'bin'), { recursive: true });
  mkdirSync(join(prefix, 'lib', 'node_modules'), { recursive: true });
  symlinkSync(ROOT.replace(/\/$/, ''), join(prefix, 'lib', 'node_modules', 'goal-loop'));
  symlinkSync(CLI, join(prefix, 'bin', 'goal-loop'));
  chmodSync(CLI, 0o755); // as npm link makes its bin executable
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    npm_config_prefix: prefix,
    PATH: `${join(prefix, 'bin')}${delimiter}${process.env.PATH ?? ''}`,
    XDG_STATE_HOME: join(root, 'state'),
    XDG_CACHE_HOME: join(root, 'cache'),
    TMPDIR: root,
    NO_COLOR: '1',
    // Who commits in the scratch repositories the guides make (a reader's git knows already).
    GIT_AUTHOR_NAME: 'A Reader',
    GIT_AUTHOR_EMAIL: 'reader@example.com',
    GIT_COMMITTER_NAME: 'A Reader',
    GIT_COMMITTER_EMAIL: 'reader@example.com',
  };
  for (const name of ['GOAL_LOOP_DB', 'GOAL_LOOP_WORKSPACES', 'DATABASE_URL', 'ANTHROPIC_API_KEY', 'LOG_LEVEL']) delete env[name];
  return env;
}

/** A line of a shell block that runs `goal-loop` offline: help, version, status, logs, plan (not a synopsis with placeholders). */
function offlineGoalLoop(line: string): boolean {
  const cmd = line.replace(/^\$ /, '').trim();
  if (!/^goal-loop(\s|$)/.test(cmd) || /[<[…|]/.test(cmd.replace(/\s#.*$/, ''))) return false;
  return /^goal-loop (--help|-h|--version|-V|status|logs|plan|\S+ (--help|-h))\b/.test(cmd);
}

describe('commands the documents print', () => {
  const all = sessions();

  it('there are checked blocks in the README and the getting-started guide', () => {
    expect(all.map((s) => s.doc)).toEqual(expect.arrayContaining(['README.md', 'docs/getting-started.md']));
  });

  it('every console block (a session with `$` prompts) is a checked block', () => {
    const unchecked = DOCS.flatMap((doc) =>
      parseMarkdown(readDoc(doc))
        .fences.filter((f) => f.lang === 'console' && f.before !== MARKER)
        .map((f) => `${doc}:${f.no}`),
    );
    expect(unchecked).toEqual([]);
  });

  it('every offline goal-loop command in a shell block is run, as printed, in a checked block', () => {
    const bare = (command: string) =>
      command
        .replace(/^\$ /, '')
        .replace(/\s+#.*$/, '')
        .trim();
    const checked = new Set(all.flatMap((s) => s.steps.map((step) => bare(step.command))));
    const unchecked: string[] = [];
    for (const doc of DOCS) {
      for (const fence of parseMarkdown(readDoc(doc)).fences) {
        if (!['sh', 'console', 'bash', 'shell'].includes(fence.lang) || fence.before === MARKER) continue;
        for (const { no, text } of fence.body) if (offlineGoalLoop(text) && !checked.has(bare(text))) unchecked.push(`${doc}:${no}: ${text}`);
      }
    }
    expect(unchecked).toEqual([]);
  });

  for (const session of all) {
    it(`${session.doc}:${session.line}: ${session.steps.map((s) => s.command.replace(/\s+#.*$/, '')).join('; ')}`, { timeout: 240_000 }, async () => {
      const env = await sessionEnv();
      let cwd = ROOT;
      for (const step of session.steps) {
        const cd = /^cd (.+)$/.exec(step.command);
        const r = await runStep(cd ? { ...step, command: `cd ${cd[1]} && pwd` } : step, env, cwd);
        if (cd && r.code === 0) cwd = r.stdout.trim();
        const where = `${session.doc}:${step.line}: $ ${step.command}\n${r.text}`;
        expect(r.code, where).toBe(step.exit);
        const missing = step.expect.filter((e) => e.trim() !== '…' && !matches(e, r.lines));
        expect(missing, where).toEqual([]);
      }
    });
  }
});

describe('files the guide shows', () => {
  it('docs/getting-started.md shows examples/first-goal.yml as it is', () => {
    const shown = parseMarkdown(readDoc('docs/getting-started.md')).fences.filter((f) => f.lang === 'yaml' && f.body.some((l) => l.text === 'goal_id: first-goal'));
    expect(shown).toHaveLength(1);
    expect(`${shown[0]!.body.map((l) => l.text).join('\n')}\n`).toBe(readFileSync(join(ROOT, 'examples/first-goal.yml'), 'utf8'));
  });
});

describe('the checker itself', () => {
  it('reads commands, exit codes and output lines, and `…` as any text', () => {
    const fence: Fence = {
      lang: 'console',
      no: 1,
      before: MARKER,
      body: ['$ goal-loop --version', '0.1.0', '$ goal-loop plan --goal x.yml   # exit 1', 'goal-loop: invalid goal spec …'].map((text, i) => ({ no: i + 2, text })),
    };
    expect(steps('x.md', fence)).toEqual([
      { command: 'goal-loop --version', exit: 0, expect: ['0.1.0'], line: 2 },
      { command: 'goal-loop plan --goal x.yml   # exit 1', exit: 1, expect: ['goal-loop: invalid goal spec …'], line: 4 },
    ]);
    expect(matches('goal-loop: invalid goal spec …', ['goal-loop: invalid goal spec x.yml: file not found'])).toBe(true);
    expect(matches('LOOP_COMPLETE 4/4 tasks, …', ['LOOP_COMPLETE 3/4 tasks, 5 iterations'])).toBe(false);
  });

  it('counts help, version, status, logs and plan as offline, and a synopsis or run as not', () => {
    expect(['goal-loop --help', 'goal-loop run --help', '$ goal-loop status', 'goal-loop plan --goal examples/demo-goal.yml'].filter(offlineGoalLoop)).toHaveLength(4);
    expect(['goal-loop status [--json]', 'goal-loop logs <goal-id>', 'goal-loop run --repo . --goal g.yml', 'goal-loop serve'].filter(offlineGoalLoop)).toEqual([]);
  });
});
