import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOB_SUMMARY_MAX_BYTES } from '../../src/action/job-summary.js';
import { appendOutputs, appendSummary, truncateMarkdown } from '../../src/action/runner-files.js';
import { tempDir } from '../helpers/temp.js';
import { markdownProblems } from '../steering/report/markdown-structure.js';

/**
 * The runner's reading of GITHUB_OUTPUT (actions/runner SetOutputFileCommand): `name=value`, or
 * `name<<DELIMITER`, then every line up to one that is exactly the delimiter. Throws where the runner fails the step.
 */
function runnerOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const eq = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (eq >= 0 && (heredoc < 0 || eq < heredoc)) {
      out[line.slice(0, eq)] = line.slice(eq + 1);
      continue;
    }
    if (heredoc < 0) throw new Error(`Invalid format '${line}'`);
    const name = line.slice(0, heredoc);
    const delimiter = line.slice(heredoc + 2);
    const value: string[] = [];
    for (i++; ; i++) {
      if (i >= lines.length) throw new Error(`Matching delimiter not found '${delimiter}'`);
      if (lines[i] === delimiter) break;
      value.push(lines[i]!);
    }
    out[name] = value.join('\n');
  }
  return out;
}

describe('GITHUB_OUTPUT', () => {
  it('creates the file when missing and writes each output in the multi-line form with a random delimiter', async () => {
    const path = join(await tempDir(), 'output');
    await appendOutputs(path, { goal_id: '7', state: 'LOOP_COMPLETE', branch: 'goal/7-o', pr_number: '12' });
    const text = await readFile(path, 'utf8');
    expect(text).toMatch(/^goal_id<<(ghadelimiter_[0-9a-f-]{36})\n7\n\1\nstate<<(ghadelimiter_[0-9a-f-]{36})\nLOOP_COMPLETE\n\2\nbranch<<(\S+)\ngoal\/7-o\n\3\npr_number<<(\S+)\n12\n\4\n$/);
    expect(new Set([...text.matchAll(/<<(\S+)/g)].map((m) => m[1])).size).toBe(4);
    expect(runnerOutputs(text)).toEqual({ goal_id: '7', state: 'LOOP_COMPLETE', branch: 'goal/7-o', pr_number: '12' });
  });

  it('appends after what other steps wrote, on a line of its own, and keeps their outputs', async () => {
    const path = join(await tempDir(), 'output');
    await writeFile(path, 'before=1\nlast<<EOF\na\nEOF');
    await appendOutputs(path, { goal_id: '7' });
    await appendOutputs(path, { state: 'ESCALATED' });
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('before=1\nlast<<EOF\na\nEOF\ngoal_id<<ghadelimiter_')).toBe(true);
    expect(runnerOutputs(text)).toEqual({ before: '1', last: 'a', goal_id: '7', state: 'ESCALATED' });
  });

  it('a value can never end its output early and define another: it reads back exactly as given', async () => {
    const path = join(await tempDir(), 'output');
    const values = {
      a: 'line one\nEOF\ngoal_id=hacked\nb<<X\ninjected\nX',
      b: 'ghadelimiter_00000000-0000-0000-0000-000000000000\nstate=owned',
      c: '',
      d: 'ends with a newline\n',
      e: 'crlf\r\nstate=owned',
    };
    await appendOutputs(path, values);
    expect(runnerOutputs(await readFile(path, 'utf8'))).toEqual(values);
  });

  it.each(['', '1abc', 'a b', 'a=b', 'a<<b', 'a\nb', 'né', '-x'])('refuses the output name %j before writing anything', async (name) => {
    const path = join(await tempDir(), 'output');
    await writeFile(path, 'before=1\n');
    await expect(appendOutputs(path, { goal_id: '7', [name]: 'x' })).rejects.toThrow(/Not an output name/);
    expect(await readFile(path, 'utf8')).toBe('before=1\n');
  });

  it('accepts names of letters, digits, _ and -', async () => {
    const path = join(await tempDir(), 'output');
    await appendOutputs(path, { _a: '1', 'pr-number_2': '2', Z: '3' });
    expect(runnerOutputs(await readFile(path, 'utf8'))).toEqual({ _a: '1', 'pr-number_2': '2', Z: '3' });
  });
});

describe('GITHUB_STEP_SUMMARY', () => {
  it('creates the file when missing, appends after what the step wrote, on a line of its own', async () => {
    const path = join(await tempDir(), 'summary');
    await appendSummary(path, '## one');
    expect(await readFile(path, 'utf8')).toBe('## one\n');
    await writeFile(path, 'other step text', { flag: 'a' });
    await appendSummary(path, '## two\n');
    expect(await readFile(path, 'utf8')).toBe('## one\nother step text\n## two\n');
  });

  it('keeps the whole file within 1 MiB: the markdown is cut at a line, its fence and <details> closed, with a notice', async () => {
    const path = join(await tempDir(), 'summary');
    const before = `${'b'.repeat(99)}\n`.repeat(10_000); // 1,000,000 bytes from earlier writes
    await writeFile(path, before);
    const attempt = (i: number) => `<details><summary>attempt ${i}</summary>\n\n\`\`\`\`text\n${'😀 output line\n'.repeat(200)}\`\`\`\`\n\n</details>`;
    const markdown = ['## goal-loop: o', ...Array.from({ length: 40 }, (_, i) => attempt(i))].join('\n\n');
    expect(Buffer.byteLength(markdown)).toBeGreaterThan(JOB_SUMMARY_MAX_BYTES - before.length);
    await appendSummary(path, markdown);
    const { size } = await stat(path);
    expect(size).toBeLessThanOrEqual(JOB_SUMMARY_MAX_BYTES);
    expect(size).toBeGreaterThan(JOB_SUMMARY_MAX_BYTES - 200);
    const text = await readFile(path, 'utf8');
    expect(text.startsWith(before)).toBe(true);
    const added = text.slice(before.length);
    expect(added.startsWith('## goal-loop: o\n\n<details><summary>attempt 0</summary>')).toBe(true);
    expect(added).toMatch(/> \[!WARNING\]\n> The rest of this summary was left out: GitHub shows no job summary over 1 MiB\.\n$/);
    expect(markdownProblems(added)).toEqual([]);
    expect(added).not.toContain('attempt 39');
  });

  it('appends nothing when not even the notice fits, and only the notice when no line of the markdown does', async () => {
    const full = join(await tempDir(), 'summary');
    await writeFile(full, 'x'.repeat(JOB_SUMMARY_MAX_BYTES - 10));
    await appendSummary(full, '## goal-loop: o');
    expect((await stat(full)).size).toBe(JOB_SUMMARY_MAX_BYTES - 10);

    const nearly = join(await tempDir(), 'summary');
    await writeFile(nearly, `${'x'.repeat(JOB_SUMMARY_MAX_BYTES - 1000)}\n`);
    await appendSummary(nearly, `## ${'y'.repeat(5000)}`);
    const added = (await readFile(nearly, 'utf8')).slice(JOB_SUMMARY_MAX_BYTES - 999);
    expect(added).toMatch(/^> \[!WARNING\]\n> The rest of this summary was left out/);
    expect((await stat(nearly)).size).toBeLessThanOrEqual(JOB_SUMMARY_MAX_BYTES);
  });
});

describe('truncateMarkdown', () => {
  it('cuts after a whole line within the budget, in bytes, and closes what the cut left open', () => {
    const md = ['<details><summary>a</summary>', '', '~~~~', 'é'.repeat(10), 'é'.repeat(10), '~~~~', '', '</details>', 'tail'].join('\n');
    const cut = truncateMarkdown(md, 80)!;
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(80);
    expect(cut).toBe(['<details><summary>a</summary>', '', '~~~~', 'é'.repeat(10), '~~~~', '', '</details>'].join('\n'));
    expect(truncateMarkdown(md, 10_000)).toBe(md);
    expect(truncateMarkdown('```text\nx', 100)).toBe('```text\nx\n```');
    // A backtick line with a backtick in its info string opens no fence.
    expect(truncateMarkdown('``` a`b\nx', 100)).toBe('``` a`b\nx');
    expect(truncateMarkdown('a very long first line', 5)).toBeUndefined();
    expect(truncateMarkdown('x', 0)).toBeUndefined();
  });
});
