/**
 * Checks markdown the way GitHub reads it, for what matters here: every fence closed (a line of
 * at least as many backticks as its opening, nothing after), every <details> closed outside fences,
 * and what untrusted text left outside fences and code spans.
 */
export function markdownProblems(md: string): string[] {
  const problems: string[] = [];
  let fence = 0;
  let depth = 0;
  const outside: string[] = [];
  for (const line of md.split('\n')) {
    const m = line.match(/^ {0,3}(`{3,})(.*)$/);
    if (fence) {
      if (m && m[1]!.length >= fence && m[2]!.trim() === '') fence = 0;
      continue;
    }
    if (m) {
      if (m[2]!.includes('`')) problems.push(`an opening fence with a backtick in its info string: ${line}`);
      fence = m[1]!.length;
      continue;
    }
    outside.push(line);
    if (/^<details( open)?><summary>.*<\/summary>$/.test(line)) depth++;
    else if (line === '</details>') {
      depth--;
      if (depth < 0) problems.push('a </details> closes nothing');
    }
  }
  if (fence) problems.push('a fence is never closed');
  if (depth !== 0) problems.push(`${depth} <details> left open`);
  return problems;
}

/** The markdown outside fences and code spans: where untrusted text would be read as markup. */
export function prose(md: string): string {
  const out: string[] = [];
  let fence = 0;
  for (const line of md.split('\n')) {
    const m = line.match(/^ {0,3}(`{3,})(.*)$/);
    if (fence) {
      if (m && m[1]!.length >= fence && m[2]!.trim() === '') fence = 0;
      continue;
    }
    if (m) {
      fence = m[1]!.length;
      continue;
    }
    out.push(stripCodeSpans(line));
  }
  return out.join('\n');
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
