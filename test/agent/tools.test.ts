import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolsForTask } from '../../src/agent/tools.js';
import { lastToolResults, reply, text, toolUse } from '../helpers/fake-anthropic.js';
import { claudeAgent, fakeApi, input, spec, workspace } from './fixtures.js';

const goal = (extra: Record<string, unknown> = {}) => spec({ objective: 'tools', tasks: [{ id: 't1', title: 'tools', verification: 'true', ...extra }] });

/** Plays one assistant turn of tool calls, then "done"; returns the tool results the model got back. */
async function oneTurn(calls: ReturnType<typeof toolUse>[], files: Record<string, string>, prepare?: (root: string, dir: string) => void, task: Record<string, unknown> = {}) {
  const fake = await fakeApi();
  fake.push(reply(calls), reply([text('done')]));
  const ws = await workspace(files);
  prepare?.(ws.root, ws.dir);
  const outcome = await claudeAgent(fake).work(input(goal(task), ws.dir));
  expect(outcome.ok).toBe(true);
  expect(fake.violations).toEqual([]);
  return { results: lastToolResults(fake.requests[1]!.body), fake, ...ws };
}

describe("the agent's tools", () => {
  it('refuses path traversal, absolute paths, symlink escapes, .git and protected paths, as is_error results', async () => {
    const { results, root, dir } = await oneTurn(
      [
        toolUse('read_file', { path: '../secret.txt' }),
        toolUse('read_file', { path: '/etc/passwd' }),
        toolUse('write_file', { path: 'src/../../escape.txt', content: 'x' }),
        toolUse('edit_file', { path: 'outside/secret.txt', old_string: 'host', new_string: 'pwned' }),
        toolUse('write_file', { path: 'outside/planted.txt', content: 'x' }),
        toolUse('list_files', { path: '.git' }),
        toolUse('write_file', { path: '.git/hooks/pre-commit', content: '#!/bin/sh\n' }),
        toolUse('search', { pattern: 'host secret', path: '..' }),
        toolUse('search', { pattern: 'host secret', path: 'outside' }),
        toolUse('write_file', { path: '.github/workflows/ci.yml', content: 'on: push\n' }),
        toolUse('search', { pattern: 'host secret' }),
      ],
      { 'src/index.js': 'export const x = 1;\n' },
      (hostRoot, workDir) => {
        writeFileSync(join(hostRoot, 'secret.txt'), 'host secret\n');
        mkdirSync(join(workDir, '.git', 'hooks'), { recursive: true });
        symlinkSync(hostRoot, join(workDir, 'outside'));
      },
    );
    expect(results.map((r) => r.is_error)).toEqual([true, true, true, true, true, true, true, true, true, true, false]);
    expect(results[0]!.content).toMatch(/`\.\.` is refused/);
    expect(results[1]!.content).toMatch(/absolute paths are refused/);
    expect(results[2]!.content).toMatch(/`\.\.` is refused/);
    expect(results[3]!.content).toMatch(/resolves outside the workspace/);
    expect(results[4]!.content).toMatch(/outside the workspace/);
    expect(results[5]!.content).toMatch(/\.git is off limits/);
    expect(results[6]!.content).toMatch(/\.git is off limits/);
    expect(results[7]!.content).toMatch(/`\.\.` is refused/);
    expect(results[8]!.content).toMatch(/resolves outside the workspace/);
    expect(results[9]!.content).toMatch(/protected path/);
    // ripgrep does not follow the planted symlink out of the workspace.
    expect(results[10]!.content).toMatch(/^no matches/);
    expect(readFileSync(join(root, 'secret.txt'), 'utf8')).toBe('host secret\n');
    expect(existsSync(join(root, 'escape.txt'))).toBe(false);
    expect(existsSync(join(root, 'planted.txt'))).toBe(false);
    expect(existsSync(join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(dir, '.github', 'workflows', 'ci.yml'))).toBe(false);
    for (const r of results) expect(r.content).not.toContain('host secret\n');
  });

  it('edit_file replaces exactly one occurrence and explains a missing or ambiguous old_string', async () => {
    const { results, dir } = await oneTurn(
      [
        toolUse('edit_file', { path: 'a.txt', old_string: 'missing', new_string: 'x' }),
        toolUse('edit_file', { path: 'a.txt', old_string: 'foo', new_string: 'bar' }),
        toolUse('edit_file', { path: 'a.txt', old_string: 'foo();\nkeep', new_string: 'baz();\nkeep $& $1' }),
        toolUse('edit_file', { path: 'nope.txt', old_string: 'a', new_string: 'b' }),
        toolUse('edit_file', { path: 'a.txt', old_string: 'keep' }),
      ],
      { 'a.txt': 'foo();\nkeep\nfoo();\n' },
    );
    expect(results.map((r) => r.is_error)).toEqual([true, true, false, true, true]);
    expect(results[0]!.content).toMatch(/old_string was not found; nothing changed/);
    expect(results[1]!.content).toMatch(/old_string occurs 2 times \(lines 1, 3\); nothing changed/);
    expect(results[2]!.content).toBe('edited a.txt at line 1');
    expect(results[3]!.content).toMatch(/nope\.txt: no such file/);
    expect(results[4]!.content).toMatch(/invalid input for edit_file: new_string/);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('baz();\nkeep $& $1\nfoo();\n');
  });

  it('read_file pages long files; search finds lines; run_command keeps long output in the scratchpad for read_log', async () => {
    const long = Array.from({ length: 500 }, (_, i) => `line ${i + 1}`).join('\n');
    const { results } = await oneTurn(
      [
        toolUse('read_file', { path: 'long.txt', offset: 498 }),
        toolUse('read_file', { path: 'long.txt' }),
        toolUse('search', { pattern: 'line 4[0-9]9$' }),
        toolUse('run_command', { command: 'for i in $(seq 1 2000); do echo "row $i of the output"; done; exit 3' }),
        toolUse('read_log', { id: 'L1', offset: 6000 }),
        toolUse('read_log', { id: 'L9' }),
        toolUse('list_files', {}),
      ],
      { 'long.txt': `${long}\n`, 'src/a.js': '' },
    );
    expect(results[0]!.content).toBe('long.txt: lines 498-500 of 500\n   498\tline 498\n   499\tline 499\n   500\tline 500');
    expect(results[1]!.content).toMatch(/^long\.txt: lines 1-400 of 500\n/);
    expect(results[1]!.content).toContain('read_file {"path": "long.txt", "offset": 401}');
    expect(results[2]!.content).toMatch(/^10 matching lines\n/);
    expect(results[2]!.content).toContain('long.txt:409:line 409');
    const run = results[3]!;
    expect(run.is_error).toBe(false);
    expect(run.content).toMatch(/^exit code 3; \d+ bytes of output \(log L1\);/);
    expect(run.content).toContain('row 1 of the output');
    expect(run.content).toContain('row 2000 of the output');
    expect(run.content).not.toContain('row 1000 of the output');
    expect(run.content).toContain('read_log {"id": "L1"}');
    expect(run.content.length).toBeLessThan(4500);
    expect(results[4]!.content).toMatch(/^\[log L1 \(command\), bytes 6000-12000 of \d+; next page: read_log \{"id": "L1", "offset": 12000\}\]/);
    expect(results[5]).toMatchObject({ is_error: true, content: expect.stringMatching(/no log "L9"; logs of this attempt: L1/) });
    expect(results[6]!.content).toBe('./ (2 entries)\nlong.txt\nsrc/');
  });

  it("a task's mcp_tools narrows the tool set; the seed's names map to the built-in tools", async () => {
    expect(toolsForTask(['ripgrep_search', 'bash_execute'])).toEqual({ tools: ['search', 'run_command', 'read_log'], unknown: [] });
    expect(toolsForTask(['filesystem_view', 'filesystem_write', 'filesystem_replace', 'github.search'])).toEqual({
      tools: ['list_files', 'read_file', 'write_file', 'edit_file', 'read_log'],
      unknown: ['github.search'],
    });
    const { results, fake } = await oneTurn([toolUse('write_file', { path: 'x.txt', content: 'x' })], {}, undefined, { mcp_tools: ['ripgrep_search', 'filesystem_view'] });
    expect(fake.requests[0]!.body.tools!.map((t) => t.name)).toEqual(['list_files', 'read_file', 'search', 'read_log']);
    expect(results[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/no tool named "write_file" is available for this task/) });
  });

  it('an attempt ends when the model stops calling tools, or at the turn limit; an interrupted one sends nothing more', async () => {
    const fake = await fakeApi();
    fake.otherwise((_b, i) => reply([toolUse('list_files', {}, `toolu_l${i}`)]));
    const ws = await workspace({ 'a.txt': 'a' });
    const limited = await claudeAgent(fake, { maxTurns: 3 }).work(input(goal(), ws.dir));
    expect(limited).toMatchObject({ ok: true, summary: 'turn limit reached (3 model requests)' });
    expect(fake.requests).toHaveLength(3);

    const stop = new AbortController();
    stop.abort();
    const interrupted = await claudeAgent(fake).work(input(goal(), ws.dir, { signal: stop.signal }));
    expect(interrupted).toMatchObject({ ok: false, kind: 'infra', error: 'the attempt was interrupted' });
    expect(fake.requests).toHaveLength(3);
  });

  it('a thinking block the API refuses to take back is dropped, and the request sent again once', async () => {
    const fake = await fakeApi();
    fake.push(
      { kind: 'message', content: [{ type: 'thinking', thinking: 'look first', signature: 'sig-1' }, toolUse('list_files', {}, 'toolu_t1')] },
      (body) =>
        JSON.stringify(body.messages).includes('"thinking"')
          ? { kind: 'error', status: 400, type: 'invalid_request_error', message: 'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation.' }
          : reply([text('unexpected')]),
      (body) => (JSON.stringify(body.messages).includes('"thinking"') ? reply([text('still there')]) : reply([text('done')])),
    );
    const ws = await workspace({ 'a.txt': 'a' });
    const outcome = await claudeAgent(fake).work(input(goal(), ws.dir));
    expect(outcome).toMatchObject({ ok: true, summary: 'done' });
    expect(fake.requests.map((r) => r.status)).toEqual([200, 400, 200]);
  });
});

describe('search (ripgrep on the host, through execa)', () => {
  async function searchWith(opts: { toolLimits?: Record<string, number>; rgPath?: string }, files: Record<string, string>, pattern: string) {
    const fake = await fakeApi();
    fake.push(reply([toolUse('search', { pattern })]), reply([text('done')]));
    const ws = await workspace(files);
    const outcome = await claudeAgent(fake, opts).work(input(goal(), ws.dir));
    expect(outcome.ok).toBe(true);
    return lastToolResults(fake.requests[1]!.body)[0]!;
  }

  it('stops ripgrep past the output cap and keeps only whole lines', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => `match ${i} ${'x'.repeat(40)}`).join('\n');
    const r = await searchWith({ toolLimits: { searchMaxBytes: 2000, listingChars: 1_000_000 } }, { 'a.txt': `${many}\n` }, 'match');
    expect(r.is_error).toBe(false);
    expect(r.content).toMatch(/^\d+ matching lines \(output stopped: too many matches/);
    const lines = r.content.split('\n').slice(1).filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n').length).toBeLessThanOrEqual(2000);
    for (const line of lines) expect(line).toMatch(/^(\.\/)?a\.txt:\d+:match \d+ x{40}$/);
  });

  it('tells the model when ripgrep is not installed', async () => {
    const r = await searchWith({ rgPath: '/nonexistent/rg' }, { 'a.txt': 'x\n' }, 'x');
    expect(r.is_error).toBe(true);
    expect(r.content).toMatch(/ripgrep \(rg\) is not installed/);
  });
});
