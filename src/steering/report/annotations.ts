import { posix } from 'node:path';
import { plainText } from '../../common/plain-text.js';
import { redactUrls } from '../../common/redact-urls.js';
import { headChars, sanitizeProse } from '../../common/untrusted.js';

/** A check-run annotation as the Checks API takes it (`output.annotations[]`). */
export interface CheckAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: 'failure';
  message: string;
}

/** The Checks API takes at most this many annotations per request. */
export const ANNOTATIONS_PER_REQUEST = 50;
const MESSAGE_CHARS = 1000;
/** Past these, a location from untrusted output is no real one: the line is dropped, the column left out. */
const MAX_LINE = 1_000_000;
const MAX_COLUMN = 10_000;

export interface AnnotationParseOptions {
  /** The workspace's absolute path as the verification saw it: absolute paths under it are made relative. */
  workspaceRoot?: string;
}

/**
 * Locations (`file:line`, `file:line:col`) named by a verification's output, in the common formats:
 * tsc (`a.ts(12,5): error TS…` and `a.ts:12:5 - error TS…`), eslint (stylish, unix, compact),
 * jest / vitest (`❯ a.test.ts:12:5`, stack frames, ` FAIL  a.test.ts > suite > name`) and node:test
 * (`location: '/abs/a.test.js:12:5'`). Pure: the output is untrusted, so a path is kept only when
 * it is inside the repository (relative, no `..`, not in node_modules; an absolute path only under
 * the workspace root). Deduplicated by path and line, in order of appearance.
 */
export function parseAnnotations(output: string, opts: AnnotationParseOptions = {}): CheckAnnotation[] {
  const out: CheckAnnotation[] = [];
  const seen = new Set<string>();
  const add = (rawPath: string, line: string, col: string | undefined, message: string): CheckAnnotation | undefined => {
    const path = repoPath(rawPath, opts.workspaceRoot);
    const start = Number(line);
    if (!path || !Number.isSafeInteger(start) || start < 1 || start > MAX_LINE) return undefined;
    const key = `${path}:${start}`;
    if (seen.has(key)) return undefined;
    seen.add(key);
    const column = col === undefined ? undefined : Number(col);
    const a: CheckAnnotation = { path, start_line: start, end_line: start, annotation_level: 'failure', message: messageText(message) };
    if (column !== undefined && Number.isSafeInteger(column) && column >= 1 && column <= MAX_COLUMN) {
      a.start_column = column;
      a.end_column = column;
    }
    out.push(a);
    return a;
  };

  let eslintFile: string | undefined;
  /** The test that failed and its error, for a stack-style location that follows them. */
  let failing: string | undefined;
  let error: string | undefined;
  /** A stack location is taken once per error (the first frame in the repository). */
  let located = false;
  let nodeTest: { name: string; annotation?: CheckAnnotation; errorNext: boolean } | undefined;

  for (const raw of plainText(output).split('\n')) {
    const line = raw.replace(/\s+$/, '');

    const tsc = firstMatch(
      line,
      // tsc: src/a.ts(12,5): error TS2322: …
      /^\s*([^\s()][^()]*?)\((\d+),(\d+)\): (error) (TS\d+: .*)$/,
      // tsc --pretty: src/a.ts:12:5 - error TS2322: …
      /^\s*(\S+?):(\d+):(\d+) - (error) (TS\d+: .*)$/,
    );
    if (tsc) {
      add(tsc[1]!, tsc[2]!, tsc[3], `${tsc[4]} ${tsc[5]}`);
      continue;
    }
    const eslint = firstMatch(
      line,
      // eslint --format unix: file:12:5: message [Error/rule]
      /^(\S+?):(\d+):(\d+): (.*\[Error(?:\/[^\]]*)?\])$/,
      // eslint --format compact: file: line 12, col 5, Error - message (rule)
      /^(\S+?): line (\d+), col (\d+), (Error - .*)$/,
    );
    if (eslint) {
      add(eslint[1]!, eslint[2]!, eslint[3], eslint[4]!);
      continue;
    }
    // eslint stylish: a path line, then "  12:5  error  message  rule"
    const stylish = line.match(/^\s+(\d+):(\d+)\s+error\s+(.+)$/);
    if (stylish && eslintFile) {
      add(eslintFile, stylish[1]!, stylish[2], `error ${stylish[3]!.trim()}`);
      continue;
    }
    if (/^(?:\/|\.{1,2}\/)?[\w@.\-+/]+\.[A-Za-z0-9]+$/.test(line) && !/^\s/.test(line)) {
      eslintFile = line;
      continue;
    }
    if (line.trim() === '') eslintFile = undefined;

    // node:test (TAP and spec reporters): "not ok 1 - name" / "✖ name", then "location: '/abs/file.js:12:5'"
    const notOk = firstMatch(line, /^\s*not ok \d+ - (.*)$/, /^\s*✖ (.*?)(?: \([\d.]+m?s\))?$/);
    if (notOk) {
      nodeTest = { name: notOk[1]!, errorNext: false };
      failing = notOk[1]!;
      error = undefined;
      located = false;
      continue;
    }
    const location = line.match(/^\s*location: '(.+):(\d+):(\d+)'$/);
    if (location) {
      const a = add(location[1]!, location[2]!, location[3], nodeTest ? `not ok: ${nodeTest.name}` : 'failed');
      if (nodeTest && a) nodeTest.annotation = a;
      continue;
    }
    const nodeError = nodeTest?.annotation ? line.match(/^\s*error: (.*)$/) : null;
    if (nodeTest?.annotation && nodeError) {
      const text = nodeError[1]!.replace(/^'(.*)'$/, '$1');
      if (text === '|-' || text === '|' || text === '>-') nodeTest.errorNext = true;
      else nodeTest.annotation.message = messageText(`${nodeTest.annotation.message}: ${text}`);
      continue;
    }
    if (nodeTest?.annotation && nodeTest.errorNext && line.trim()) {
      nodeTest.annotation.message = messageText(`${nodeTest.annotation.message}: ${line.trim()}`);
      nodeTest.errorNext = false;
      continue;
    }

    // jest / vitest: the failing test, its error, then where.
    const jestFail = line.match(/^\s*(?:FAIL|×|✕|●)\s+(.+)$/);
    if (jestFail) {
      failing = jestFail[1]!.trim();
      error = undefined;
      located = false;
      continue;
    }
    const jestError = line.match(/^\s*((?:\w*Error|AssertionError)(?: \[\w+\])?: .*|Expected: .*|expected .*)$/);
    if (jestError) {
      if (!error || located) {
        error = jestError[1]!;
        located = false;
      }
      continue;
    }
    // ❯ src/a.test.ts:12:5   /   at Object.<anonymous> (src/a.test.ts:12:5)   /   at src/a.test.ts:12:5
    const frame = firstMatch(line, /^\s*❯ (.+?):(\d+):(\d+)$/, /^\s*at .*\((.+?):(\d+):(\d+)\)$/, /^\s*at (\S+?):(\d+):(\d+)$/);
    if (frame) {
      if (located || (!failing && !error)) continue;
      if (add(frame[1]!, frame[2]!, frame[3], [failing, error].filter(Boolean).join(' — '))) located = true;
    }
  }
  return out;
}

/** The match of the first pattern that matches `line`, tried in order. */
function firstMatch(line: string, ...patterns: RegExp[]): RegExpMatchArray | null {
  for (const re of patterns) {
    const m = line.match(re);
    if (m) return m;
  }
  return null;
}

/**
 * A path from untrusted output as a path relative to the repository root, or undefined when it
 * is not one: absolute paths only under `root`, never `..`, never node_modules or a URL but file://.
 */
export function repoPath(raw: string, root?: string): string | undefined {
  let p = raw.trim().replace(/^['"]|['"]$/g, '');
  if (p.startsWith('file://')) {
    try {
      p = decodeURIComponent(new URL(p).pathname);
    } catch {
      return undefined;
    }
  }
  // Format characters (bidi overrides such as U+202E, zero-width ones) would make a path read as another.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters in an untrusted path is the point
  if (!p || /[\u0000-\u001f\u007f\\]/.test(p) || /\p{Cf}/u.test(p) || /^[a-z][a-z0-9+.-]*:/i.test(p)) return undefined;
  if (p.split('/').includes('..')) return undefined;
  if (p.startsWith('/')) {
    const base = root?.replace(/\/+$/, '');
    if (!base || !p.startsWith(`${base}/`)) return undefined;
    p = p.slice(base.length + 1);
  }
  p = posix.normalize(p).replace(/^(\.\/)+/, '');
  if (!p || p === '.' || p.startsWith('/') || p.startsWith('../') || p.split('/').includes('..')) return undefined;
  if (p.split('/').includes('node_modules') || p.split('/').includes('.git')) return undefined;
  return p;
}

function messageText(s: string): string {
  const one = redactUrls(sanitizeProse(s)).replace(/\s+/g, ' ').trim();
  return one.length > MESSAGE_CHARS ? `${headChars(one, MESSAGE_CHARS - 1)}…` : one || 'failed';
}

/** The first `max` annotations not already on the check run (by path, line and message). */
export function newAnnotations(
  found: readonly CheckAnnotation[],
  existing: ReadonlyArray<{ path: string; start_line: number; message?: string | null }>,
  max = ANNOTATIONS_PER_REQUEST,
): CheckAnnotation[] {
  const have = new Set(existing.map((a) => `${a.path}:${a.start_line}`));
  return found.filter((a) => !have.has(`${a.path}:${a.start_line}`)).slice(0, max);
}
