import { utf8Bytes } from '../../common/untrusted.js';

/**
 * Markdown within a size limit (in UTF-8 bytes, as GitHub counts it), whole blocks at a time (a fence or a <details> is never cut):
 * the least important blocks are first shrunk to their one-line form, then left out, with a
 * note saying how many. Importance: higher is kept longer; blocks without `protect` are shrunk
 * and then left out before any protected block is shrunk.
 */
export interface Block {
  full: string;
  line: string;
  importance: number;
  /** Shrunk and left out only after every block without it (each task's last attempt). */
  protect?: boolean;
}

export const SEPARATOR = '\n\n';

export function fitBlocks(blocks: readonly Block[], budget: number, omitted: (n: number) => string): string[] {
  const level: Array<'full' | 'line' | 'drop'> = blocks.map(() => 'full');
  const full = blocks.map((b) => utf8Bytes(b.full));
  const line = blocks.map((b) => utf8Bytes(b.line));
  const size = (i: number) => (level[i] === 'full' ? full[i]! : level[i] === 'line' ? line[i]! : 0);
  const shown = () => level.filter((l) => l !== 'drop').length;
  const dropped = () => blocks.length - shown();
  let total = blocks.reduce((n, _b, i) => n + size(i) + SEPARATOR.length, 0);
  const note = () => (dropped() ? utf8Bytes(omitted(dropped())) + SEPARATOR.length : 0);
  const order = blocks.map((b, i) => ({ i, importance: b.importance, protect: b.protect === true })).sort((a, b) => Number(a.protect) - Number(b.protect) || a.importance - b.importance || a.i - b.i);
  const shrink = (protect: boolean) => {
    for (const { i } of order.filter((o) => o.protect === protect)) {
      if (total + note() <= budget) return;
      total -= size(i);
      level[i] = 'line';
      total += size(i);
    }
  };
  const drop = (protect: boolean) => {
    for (const { i } of order.filter((o) => o.protect === protect)) {
      if (total + note() <= budget) return;
      total -= size(i) + SEPARATOR.length;
      level[i] = 'drop';
    }
  };
  shrink(false);
  drop(false);
  shrink(true);
  drop(true);
  // What dropping freed is given back to the most important blocks, whole again where they fit.
  for (const { i } of [...order].reverse()) {
    if (level[i] !== 'line') continue;
    const grow = full[i]! - line[i]!;
    if (total + grow + note() <= budget) {
      level[i] = 'full';
      total += grow;
    }
  }
  const out = blocks.flatMap((b, i) => (level[i] === 'full' ? [b.full] : level[i] === 'line' ? [b.line] : []));
  if (dropped()) out.push(omitted(dropped()));
  return out;
}

/** Lines within a size limit (UTF-8 bytes): the first that fit, then one saying how many were left out. */
export function fitLines(lines: readonly string[], budget: number, omitted: (n: number) => string): string[] {
  const out: string[] = [];
  let total = 0;
  for (let i = 0; i < lines.length; i++) {
    const rest = lines.length - i - 1;
    const reserve = rest ? utf8Bytes(omitted(rest)) + 1 : 0;
    const size = utf8Bytes(lines[i]!);
    if (total + size + 1 + reserve > budget) {
      out.push(omitted(lines.length - i));
      return out;
    }
    out.push(lines[i]!);
    total += size + 1;
  }
  return out;
}
