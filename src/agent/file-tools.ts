import { posix, relative } from 'node:path';
import { protectedMatches } from '../config/protected-paths.js';
import type { ToolInput } from './tool-catalog.js';
import { bounded, type ToolEnv, ToolError, type ToolOutcome } from './tool-results.js';

/** The file tools: list_files, read_file, write_file, edit_file, all confined to the workspace. */

export async function listFiles(t: ToolEnv, input: ToolInput<'list_files'>): Promise<ToolOutcome> {
  const path = input.path?.trim() || '.';
  const { entries, truncated } = await t.ctx.files.list(path);
  const lines = entries.map((e) => `${e.name}${e.type === 'dir' ? '/' : e.type === 'symlink' ? '@' : ''}`);
  const body = `${path === '.' ? './' : `${path.replace(/\/+$/, '')}/`} (${entries.length} entries${truncated ? ', list cut' : ''})\n${lines.join('\n')}`;
  return { content: await bounded(t, 'list', body), isError: false, summary: `list_files ${path} → ${entries.length} entries` };
}

export async function readFile(t: ToolEnv, input: ToolInput<'read_file'>): Promise<ToolOutcome> {
  const text = await t.ctx.files.read(input.path);
  if (text.includes('\0')) return { content: `${input.path}: a binary file (${Buffer.byteLength(text)} bytes); not shown`, isError: false, summary: `read_file ${input.path} → binary` };
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const total = lines.length;
  const start = Math.min((input.offset ?? 1) - 1, total);
  const limit = Math.min(input.limit ?? t.limits.readLines, t.limits.maxReadLines);
  const out: string[] = [];
  let chars = 0;
  let i = start;
  for (; i < Math.min(total, start + limit); i++) {
    const line = `${String(i + 1).padStart(6)}\t${lines[i]}`;
    if (chars + line.length > t.limits.readChars && out.length > 0) break;
    out.push(line.length > t.limits.readChars ? `${line.slice(0, t.limits.readChars)}… [line cut]` : line);
    chars += line.length + 1;
  }
  const shown = out.length > 0 ? `lines ${start + 1}-${i} of ${total}` : `no lines (the file has ${total})`;
  const more = i < total ? `\n[… more: read_file {"path": ${JSON.stringify(input.path)}, "offset": ${i + 1}}]` : '';
  return { content: `${input.path}: ${shown}\n${out.join('\n')}${more}`, isError: false, summary: `read_file ${input.path} → ${shown}` };
}

export async function writeFile(t: ToolEnv, input: ToolInput<'write_file'>): Promise<ToolOutcome> {
  await checkProtected(t, input.path);
  await t.ctx.files.write(input.path, input.content);
  const bytes = Buffer.byteLength(input.content);
  return { content: `wrote ${input.path} (${bytes} bytes)`, isError: false, summary: `write_file ${input.path} → ${bytes} bytes` };
}

export async function editFile(t: ToolEnv, input: ToolInput<'edit_file'>): Promise<ToolOutcome> {
  await checkProtected(t, input.path);
  if (input.old_string === input.new_string) throw new ToolError(`${input.path}: old_string and new_string are the same; nothing to change`);
  const text = await t.ctx.files.read(input.path);
  const at: number[] = [];
  for (let i = text.indexOf(input.old_string); i !== -1; i = text.indexOf(input.old_string, i + input.old_string.length)) at.push(i);
  if (at.length === 0) {
    throw new ToolError(`${input.path}: old_string was not found; nothing changed. Read the file again and copy the exact text, whitespace and indentation included.`);
  }
  if (at.length > 1) {
    const lines = at.slice(0, 10).map((offset) => text.slice(0, offset).split('\n').length);
    throw new ToolError(
      `${input.path}: old_string occurs ${at.length} times (lines ${lines.join(', ')}${at.length > 10 ? ', …' : ''}); nothing changed. Include more surrounding text so it matches exactly once.`,
    );
  }
  const i = at[0]!;
  await t.ctx.files.write(input.path, text.slice(0, i) + input.new_string + text.slice(i + input.old_string.length));
  const line = text.slice(0, i).split('\n').length;
  return { content: `edited ${input.path} at line ${line}`, isError: false, summary: `edit_file ${input.path} → line ${line}` };
}

/** Refuses writes to the repo's protected paths (the checkpoint would be refused anyway). */
async function checkProtected(t: ToolEnv, path: string): Promise<void> {
  if (t.ctx.protectedPaths.length === 0) return;
  const candidates = [posix.normalize(path.replace(/^\.\/+/, ''))];
  const real = await t.ctx.files.resolveExisting(path).catch(() => undefined);
  if (real) candidates.push(relative(t.ctx.files.root, real).split('\\').join('/'));
  const hit = protectedMatches(candidates, t.ctx.protectedPaths);
  if (hit.length > 0) throw new ToolError(`${path}: a protected path (${t.ctx.protectedPaths.join(', ')}); the goal may not change it`);
}
