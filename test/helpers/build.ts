import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { withLock } from './run-lock.js';

/**
 * dist/ for the tests that run the built `goal-loop` (test/helpers/cli.ts) or import dist/ files:
 * built on first need, not for every run. A build is skipped only when nothing it reads or writes
 * changed since the last build made here: every input file (tsconfig.build.json's include, the
 * tsconfigs, package.json, TypeScript's version) and every file under dist/ has the path, size and
 * mtime recorded then. `GOAL_LOOP_TEST_BUILD=always` builds once per test run regardless. A
 * failed build fails every test file that needs dist/ without trying again in the same run.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'dist');
// One stamp and lock per checkout: git worktrees often share one node_modules (a link), and a stamp
// they shared would make each one rebuild after every build of another.
const CACHE = join(ROOT, 'node_modules', '.cache', 'goal-loop-tests', createHash('sha256').update(ROOT).digest('hex').slice(0, 16));
const STAMP = join(CACHE, 'build-stamp.json');

function walk(path: string, out: string[]): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) {
    out.push(`${relative(ROOT, path)}\0missing`);
    return;
  }
  if (st.isDirectory()) {
    for (const name of readdirSync(path).sort()) walk(join(path, name), out);
    return;
  }
  out.push(`${relative(ROOT, path)}\0${st.size}\0${st.mtimeMs}`);
}

function fingerprint(paths: string[]): string {
  const out: string[] = [];
  for (const p of paths) walk(p, out);
  return createHash('sha256').update(out.join('\n')).digest('hex');
}

function inputs(): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include?: string[]; extends?: string; files?: string[] };
  const include = [...(config.include ?? []), ...(config.files ?? [])];
  // Globs would need TypeScript's own matching: then the fingerprint cannot be trusted.
  if (include.length === 0 || include.some((p) => /[*?{}[\]]/.test(p))) return [];
  return [...include.map((p) => join(ROOT, p)), join(ROOT, 'tsconfig.build.json'), join(ROOT, 'tsconfig.json'), join(ROOT, 'package.json'), join(ROOT, 'node_modules', 'typescript', 'package.json')];
}

function tsc(): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`the build for the CLI tests failed (tsc -p tsconfig.build.json):\n${stdout}${stderr}`));
      else resolve();
    });
  });
}

let built: Promise<void> | undefined;

/** Builds dist/ unless it is already built from the current sources. Once per process. */
export function ensureBuilt(): Promise<void> {
  built ??= (async () => {
    const runDir = inject('testRunDir');
    const failed = join(runDir, 'build-failed.json');
    mkdirSync(CACHE, { recursive: true });
    await withLock(join(CACHE, 'build.lock'), async () => {
      const paths = inputs();
      // Taken before tsc reads anything: an edit made during the build makes the next check rebuild.
      let before = paths.length > 0 ? fingerprint(paths) : '';
      if (before && process.env.GOAL_LOOP_TEST_BUILD === 'always') before += `:${runDir}`;
      if (existsSync(failed)) {
        const last = JSON.parse(readFileSync(failed, 'utf8')) as { inputs: string; message: string };
        if (before && last.inputs === before) throw new Error(last.message);
      }
      if (before && existsSync(STAMP)) {
        const stamp = JSON.parse(readFileSync(STAMP, 'utf8')) as { inputs?: string; outputs?: string };
        if (stamp.inputs === before && stamp.outputs === fingerprint([DIST])) return;
      }
      try {
        await tsc();
      } catch (err) {
        writeFileSync(failed, JSON.stringify({ inputs: before, message: (err as Error).message }));
        throw err;
      }
      writeFileSync(STAMP, JSON.stringify({ inputs: before, outputs: fingerprint([DIST]) }));
    });
  })();
  return built;
}
