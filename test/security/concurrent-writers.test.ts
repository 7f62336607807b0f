import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jail, jailRoot } from '../helpers/sandbox-jail.js';

// The bot's git and file tools check the tree, then use it. That is race-free only because no
// jailed process can write the workspace while they run: task commands end (with their whole pid
// namespace) before the bot looks, and the one kind that lives on, an MCP server, gets the
// workspace read-only.
describe('a long-lived jailed process cannot write the workspace', () => {
  it('an MCP server process sees the workspace read-only (no file, no nested repository, no swap)', async () => {
    const { ws } = await jailRoot();
    writeFileSync(join(ws, 'existing.txt'), 'original\n');
    const sandbox = jail();
    const script = [
      'echo new > new.txt 2>/dev/null && echo WROTE-FILE',
      'mkdir sub 2>/dev/null && echo MADE-DIR',
      'git init -q nested 2>/dev/null && echo MADE-REPO',
      'mv existing.txt moved.txt 2>/dev/null && echo MOVED',
      'ln -s /tmp link 2>/dev/null && echo LINKED',
      'cat existing.txt',
      'echo DONE',
    ].join('; ');
    const proc = await sandbox.spawn({ program: 'bash', args: ['-c', script], cwd: ws, lifetimeMs: 30_000 });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await proc.exited;
    expect(out).toContain('DONE');
    expect(out).toContain('original');
    expect(out).not.toMatch(/WROTE-FILE|MADE-DIR|MADE-REPO|MOVED|LINKED/);
    for (const p of ['new.txt', 'sub', 'nested', 'moved.txt', 'link']) expect(existsSync(join(ws, p))).toBe(false);
  });

  it('a task command still writes the workspace', async () => {
    const { ws } = await jailRoot();
    const result = await jail().run({ command: 'echo new > new.txt && mkdir sub', cwd: ws, timeoutMs: 30_000 });
    expect(result.exitCode).toBe(0);
    expect(existsSync(join(ws, 'new.txt'))).toBe(true);
  });
});
