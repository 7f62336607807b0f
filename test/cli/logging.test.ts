import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, MAX_LOG_LINE_CHARS } from '../../src/cli/logging.js';
import { runCli } from '../helpers/cli.js';
import { cliProject } from '../helpers/cli-project.js';
import { repeatedKeys } from '../helpers/json-keys.js';

/** The process's logger, writing to memory instead of fd 2. */
function capture(): { lines: () => string[]; log: ReturnType<typeof createLogger> } {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString();
      done();
    },
  });
  return { lines: () => out.split('\n').filter(Boolean), log: createLogger('info', sink) };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('the process logger', () => {
  it('masks credentials in URLs, as before', async () => {
    const { lines, log } = capture();
    log.info({ remote: 'https://u:pw@host/r.git' }, 'fetch failed');
    await flush();
    expect(lines()).toHaveLength(1);
    expect(JSON.parse(lines()[0]!)).toMatchObject({ remote: 'https://***@host/r.git', msg: 'fetch failed' });
  });

  it("attack: a line carrying megabytes of a stranger's text is cut to a bounded, valid JSON line", async () => {
    const { lines, log } = capture();
    const body = `{"zen":"${'a'.repeat(8 * 1024 * 1024)}"}`;
    log.error({ event: { payload: body } }, 'signature does not match');
    await flush();
    expect(lines()).toHaveLength(1);
    const line = lines()[0]!;
    expect(line.length).toBeLessThan(MAX_LOG_LINE_CHARS + 1024);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(parsed).toMatchObject({ level: 50, name: 'goal-loop' });
    expect(String(parsed.msg)).toContain('cut');
  });

  it('a cut never leaves half a credential unmasked', async () => {
    const { lines, log } = capture();
    // The URL straddles the cut: its userinfo is before it, its '@' and host after.
    // (Where the text starts in the line depends on pino's fields before it: the shifts cover ±100.)
    for (let shift = 0; shift < 200; shift++) {
      const pad = ' '.repeat(MAX_LOG_LINE_CHARS - 200 + shift);
      log.warn({ text: `${pad}https://user:S3CRETS3CRET@github.com/o/r.git ${'y'.repeat(MAX_LOG_LINE_CHARS)}` }, 'long');
    }
    await flush();
    expect(lines()).toHaveLength(200);
    for (const l of lines()) {
      expect(l.length).toBeLessThan(MAX_LOG_LINE_CHARS + 1024);
      expect(l).not.toContain('S3CRET');
      expect(l).not.toContain('user:S');
    }
  });
});

describe("a goal run's log", () => {
  it('carries each key once per line (a line about the goal, on a logger bound to it)', async () => {
    // A setup that leaves a file: the loop logs it, with the goal, on the goal's logger.
    const p = await cliProject(
      `goal_id: log-keys
objective: one task
tasks:
  - { id: t1, title: One, run: "echo 1 > t1.txt", verification: "test -f t1.txt" }
`,
      { '.github/goal-loop.yml': 'setup: ["echo built > setup-made.txt"]\n' },
    );
    const run = await runCli(['run', '--repo', p.repo.bare, '--goal', p.goal, '--agent', 'scripted'], { ...p.env, LOG_LEVEL: 'debug' });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('{'));
    expect(lines.find((l) => l.includes('setup output left out'))).toContain('"goal":"log-keys"');
    for (const l of lines) expect(repeatedKeys(l), l).toEqual([]);
  });
});
