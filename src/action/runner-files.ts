import { randomUUID } from 'node:crypto';
import { appendFile, open } from 'node:fs/promises';
import { JOB_SUMMARY_MAX_BYTES } from './job-summary.js';

/**
 * The runner's file commands: `GITHUB_OUTPUT` (a step's outputs) and `GITHUB_STEP_SUMMARY` (its
 * job summary). Both files may already hold what the step wrote before: we only append, and
 * create the file when it is missing.
 */

const OUTPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const DELIMITER_TRIES = 5;

/**
 * Outputs in the multi-line form (`name<<DELIMITER`, the value, `DELIMITER`), which holds any
 * value: the delimiter is random and never occurs in the value, so no value can end its own
 * output early and define another. Every name is checked before anything is written.
 */
export async function appendOutputs(path: string, outputs: Record<string, string>): Promise<void> {
  const entries = Object.entries(outputs);
  for (const [name, value] of entries) {
    if (!OUTPUT_NAME.test(name)) throw new Error(`Not an output name: ${JSON.stringify(name).slice(0, 80)}`);
    if (typeof value !== 'string') throw new Error(`The output ${name} is not a string`);
  }
  if (entries.length === 0) return;
  const text = entries.map(([name, value]) => {
    const delimiter = delimiterFor(value);
    return `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
  });
  await appendFile(path, `${separator(await fileEnd(path))}${text.join('')}`, 'utf8');
}

function delimiterFor(value: string): string {
  for (let i = 0; i < DELIMITER_TRIES; i++) {
    const delimiter = `ghadelimiter_${randomUUID()}`;
    if (!value.includes(delimiter)) return delimiter;
  }
  throw new Error('No delimiter found that the output value does not contain');
}

/** A newline first when the file does not end with one: our first line must be a line of its own. */
function separator(end: { size: number; last: string }): string {
  return end.size > 0 && end.last !== '\n' ? '\n' : '';
}

async function fileEnd(path: string): Promise<{ size: number; last: string }> {
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { size: 0, last: '' };
    throw e;
  }
  try {
    const { size } = await file.stat();
    if (size === 0) return { size, last: '' };
    const buf = Buffer.alloc(1);
    await file.read(buf, 0, 1, size - 1);
    return { size, last: buf.toString('latin1') };
  } finally {
    await file.close();
  }
}

const TRUNCATED = `\n\n> [!WARNING]\n> The rest of this summary was left out: GitHub shows no job summary over ${JOB_SUMMARY_MAX_BYTES / 1024 / 1024} MiB.\n`;

/**
 * Markdown appended to the job summary, the whole file kept within JOB_SUMMARY_MAX_BYTES (GitHub
 * shows nothing of a bigger one): past it, the markdown is cut at a line, its open fences and
 * `<details>` closed, and a notice added. When not even the notice fits, nothing is appended.
 */
export async function appendSummary(path: string, markdown: string): Promise<void> {
  const end = await fileEnd(path);
  const sep = separator(end);
  const whole = markdown.endsWith('\n') ? markdown : `${markdown}\n`;
  const room = JOB_SUMMARY_MAX_BYTES - end.size - Buffer.byteLength(sep);
  if (Buffer.byteLength(whole) <= room) {
    await appendFile(path, `${sep}${whole}`, 'utf8');
    return;
  }
  const cut = truncateMarkdown(whole, room - Buffer.byteLength(TRUNCATED));
  if (cut !== undefined) await appendFile(path, `${sep}${cut}${TRUNCATED}`, 'utf8');
  else if (Buffer.byteLength(TRUNCATED.trimStart()) <= room) await appendFile(path, `${sep}${TRUNCATED.trimStart()}`, 'utf8');
}

/**
 * The head of `markdown` within `budget` UTF-8 bytes, cut after a whole line, with what it left
 * open closed (a fence, `<details>`), so what follows reads as markdown again. Undefined when
 * not one line fits.
 */
export function truncateMarkdown(markdown: string, budget: number): string | undefined {
  const lines = markdown.split('\n');
  // After each line: the bytes so far and what would close the blocks still open there.
  const after: Array<{ bytes: number; close: string }> = [];
  let bytes = 0;
  let fence: { ch: string; n: number } | undefined;
  let details = 0;
  for (const line of lines) {
    bytes += Buffer.byteLength(line) + (after.length > 0 ? 1 : 0);
    const m = line.match(/^ {0,3}(`{3,}|~{3,})(.*)$/);
    if (fence) {
      if (m && m[1]![0] === fence.ch && m[1]!.length >= fence.n && m[2]!.trim() === '') fence = undefined;
    } else if (m && !(m[1]![0] === '`' && m[2]!.includes('`'))) {
      fence = { ch: m[1]![0]!, n: m[1]!.length };
    } else if (/^<details[\s>]/.test(line)) details++;
    else if (/^<\/details>/.test(line) && details > 0) details--;
    after.push({ bytes, close: `${fence ? `\n${fence.ch.repeat(fence.n)}` : ''}${'\n\n</details>'.repeat(details)}` });
  }
  for (let keep = after.length; keep > 0; keep--) {
    const { bytes: head, close } = after[keep - 1]!;
    if (head + Buffer.byteLength(close) <= budget) return `${lines.slice(0, keep).join('\n')}${close}`;
  }
  return undefined;
}
