import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root: the documents' paths are relative to it. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function readDoc(path: string): string {
  return readFileSync(new URL(path, `file://${ROOT}`), 'utf8');
}

export interface Line {
  /** 1-based, for messages. */
  no: number;
  text: string;
}

export interface Fence {
  /** The info string's first word (`sh`, `console`, ...), '' when none. */
  lang: string;
  /** The line that opens the fence. */
  no: number;
  body: Line[];
  /** The last non-blank line before the fence, outside any fence (a marker comment, say). */
  before: string;
}

/** A document split the way GitHub reads it: fenced code blocks, and the lines outside them. */
export function parseMarkdown(md: string): { prose: Line[]; fences: Fence[] } {
  const prose: Line[] = [];
  const fences: Fence[] = [];
  let open: { char: string; len: number; fence: Fence } | undefined;
  let lastProse = '';
  md.split('\n').forEach((text, i) => {
    const no = i + 1;
    // Quoted fences (`> ```) are the same walk with the quote marks removed.
    const bare = text.replace(/^(?:> ?)+/, '');
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(bare);
    if (open) {
      if (m && m[1]![0] === open.char && m[1]!.length >= open.len && m[2]!.trim() === '') {
        fences.push(open.fence);
        open = undefined;
      } else open.fence.body.push({ no, text: bare });
      return;
    }
    if (m) {
      open = { char: m[1]![0]!, len: m[1]!.length, fence: { lang: m[2]!.trim().split(/\s+/)[0] ?? '', no, body: [], before: lastProse } };
      return;
    }
    prose.push({ no, text });
    if (text.trim()) lastProse = text.trim();
  });
  if (open) throw new Error(`a fence opened on line ${open.fence.no} is never closed`);
  return { prose, fences };
}

/** A line with its code spans replaced by a placeholder: links and headings inside them are text. */
export function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(?:(?!\1)[\s\S])+?\1/g, '<code/>');
}

/** GitHub's anchor for a heading's text (github-slugger: lower case, punctuation dropped, spaces to dashes). */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/[`*]/g, ''); // code spans and emphasis render as their content
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every heading's anchor, with GitHub's `-1`, `-2` suffixes for repeats. */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of parseMarkdown(md).prose) {
    const m = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text);
    if (!m) continue;
    const base = githubSlug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  no: number;
  target: string;
}

/** Inline links and images outside code (`[text](target)`), with their targets as written. */
export function links(md: string): Link[] {
  const out: Link[] = [];
  for (const { no, text } of parseMarkdown(md).prose) {
    for (const m of withoutCodeSpans(text).matchAll(/!?\[(?:[^\]]|\](?!\())*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ no, target: m[1]! });
  }
  return out;
}
