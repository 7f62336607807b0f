/**
 * Checks markdown the way GitHub reads it, for what matters here: every fence closed (a line of
 * at least as many backticks as its opening, nothing after), every <details> closed outside fences,
 * and what untrusted text left outside fences and code spans.
 */
export function markdownProblems(md: string): string[] {
  const problems: string[] = [];
  let depth = 0;
  const { outside, unclosed } = outsideFences(md, (line) => problems.push(`an opening fence with a backtick in its info string: ${line}`));
  for (const line of outside) {
    if (/^<details( open)?><summary>.*<\/summary>$/.test(line)) depth++;
    else if (line === '</details>') {
      depth--;
      if (depth < 0) problems.push('a </details> closes nothing');
    }
  }
  if (unclosed) problems.push('a fence is never closed');
  if (depth !== 0) problems.push(`${depth} <details> left open`);
  return problems;
}

/** The markdown outside fences and code spans: where untrusted text would be read as markup. */
export function prose(md: string): string {
  return outsideFences(md).outside.map(stripCodeSpans).join('\n');
}

/** The lines outside fenced code blocks, and whether a fence is left open at the end. */
function outsideFences(md: string, onBacktickInfo?: (line: string) => void): { outside: string[]; unclosed: boolean } {
  const outside: string[] = [];
  let fence = 0;
  for (const line of md.split('\n')) {
    const m = line.match(/^ {0,3}(`{3,})(.*)$/);
    if (fence) {
      if (m && m[1]!.length >= fence && m[2]!.trim() === '') fence = 0;
      continue;
    }
    if (m) {
      if (m[2]!.includes('`')) onBacktickInfo?.(line);
      fence = m[1]!.length;
      continue;
    }
    outside.push(line);
  }
  return { outside, unclosed: fence > 0 };
}

function stripCodeSpans(line: string): string {
  let out = '';
  let i = 0;
  while (i < line.length) {
    if (line[i] === '`' && line[i - 1] !== '\\') {
      let n = 0;
      while (line[i + n] === '`') n++;
      const close = findRun(line, i + n, n);
      if (close >= 0) {
        out += '<code/>';
        i = close + n;
        continue;
      }
      out += line.slice(i, i + n);
      i += n;
      continue;
    }
    out += line[i];
    i++;
  }
  return out;
}

function findRun(line: string, from: number, n: number): number {
  for (let j = from; j < line.length; j++) {
    if (line[j] !== '`') continue;
    let k = 0;
    while (line[j + k] === '`') k++;
    if (k === n) return j;
    j += k - 1;
  }
  return -1;
}
