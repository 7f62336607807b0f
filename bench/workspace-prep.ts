import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GitWorkspace } from '../src/workspace/git-workspace.js';
import { MirrorCache } from '../src/workspace/mirror-cache.js';
import { median, ms, type Verdict } from './stats.js';

const FILES = 2000;
const COMMITS = 500;
const ROUNDS = 5;
const TARGET = 5;

/**
 * Preparing the workspace of a second goal on a repository against a fresh clone, on a
 * repository of FILES files and COMMITS commits served as a file:// URL. "Second goal": an
 * earlier goal on the repository ran and was released, so the mirror is warm and its working
 * tree is parked. Before every round the remote gets a new commit, so the warm paths really
 * fetch something and check out a changed file. The mirror-only figure (no parked tree: every
 * file written) is printed for information.
 */
export async function workspacePrep(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-prep-'));
  try {
    const bare = makeHistory(root);
    const url = `file://${bare}`;
    const packMb = Number(/size-pack: (\d+)/.exec(sh(bare, 'git', 'count-objects', '-v'))?.[1] ?? 0) / 1024;
    const objects = /in-pack: (\d+)/.exec(sh(bare, 'git', 'count-objects', '-v'))?.[1];
    process.stdout.write(
      `workspace preparation: ${FILES} files, ${COMMITS} commits (${objects} objects, ${packMb.toFixed(1)} MB packed), served as ${url.replace(root, '<tmp>')}\n` +
        '  file:// makes git use the pack transport (upload-pack, index-pack), not the local-path copy shortcut\n',
    );
    const seed = join(root, 'seed');
    sh(root, 'git', 'clone', '-q', bare, seed);
    // fetchIntervalMs 0: the mirror is fetched on every preparation (the slower of its two paths).
    const mirrors = join(root, 'ws', 'mirrors');
    const warmCache = new MirrorCache({ dir: mirrors, fetchIntervalMs: 0 });
    const mirrorOnly = new MirrorCache({ dir: mirrors, fetchIntervalMs: 0, warmPerRemote: 0 });
    const make = (goalId: string, mirrorCache?: MirrorCache) =>
      new GitWorkspace({ remote: url, dir: join(root, 'ws', 'repo', goalId), goalId, branch: `goal/${goalId}`, ...(mirrorCache ? { mirrorCache } : {}) });
    const first = make('first', warmCache);
    await first.prepare(); // the first goal on the repository creates the mirror
    await goalWork(first.dir, 'first');
    await first.release(); // and parks its tree

    const sides = { fresh: [] as number[], warm: [] as number[], mirror: [] as number[] };
    const caches = { fresh: undefined, warm: warmCache, mirror: mirrorOnly };
    const checkout: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      appendFileSync(join(seed, 'CHANGELOG.md'), `- change ${i}\n`);
      sh(seed, 'git', 'add', '-A');
      sh(seed, 'git', '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', `round ${i}`);
      sh(seed, 'git', 'push', '-q', 'origin', 'HEAD:main');
      // Rotate the order so no side always runs first (fetching the new commit into the mirror)
      // or with a warmer page cache.
      const order = (['fresh', 'warm', 'mirror'] as const).map((_, k, all) => all[(k + i) % all.length]!);
      for (const side of order) {
        const ws = make(`g${i}-${side}`, caches[side]);
        const t0 = performance.now();
        await ws.prepare();
        sides[side].push(performance.now() - t0);
        await goalWork(ws.dir, `g${i}`); // what the goal leaves behind is what the next one takes
        await ws.release();
      }
      checkout.push(checkoutAlone(warmCache.pathFor(url), join(root, `checkout-${i}`)));
    }
    const [f, w, m, c] = [median(sides.fresh), median(sides.warm), median(sides.mirror), median(checkout)];
    const ratio = f / w;
    process.stdout.write(
      `  fresh clone + checkout          median ${ms(f)}  (${ROUNDS} rounds)\n` +
        `  second goal (parked tree)       median ${ms(w)}  (mirror fetch, fresh .git, index refresh, checkout of what differs)\n` +
        `  ratio                           ${ratio.toFixed(2)}x  (target >= ${TARGET}x)\n` +
        `  for information: mirror only    median ${ms(m)}  (${(f / m).toFixed(2)}x; no parked tree, all ${FILES} files written)\n` +
        `  of which checkout alone         median ${ms(c)}  (writing the ${FILES} files, which the parked tree avoids)\n`,
    );
    return [{ name: 'workspace preparation', pass: ratio >= TARGET, detail: `second goal ${ratio.toFixed(2)}x faster than a fresh clone (target >= ${TARGET}x)` }];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** A goal's traces in its tree: a few edited files, new files and build output. */
async function goalWork(dir: string, tag: string): Promise<void> {
  const tracked = sh(dir, 'git', 'ls-files').split('\n').filter(Boolean);
  for (const k of [3, 300, 1500]) appendFileSync(join(dir, tracked[k % tracked.length]!), `// ${tag}\n`);
  mkdirSync(join(dir, 'dist'), { recursive: true });
  for (let k = 0; k < 20; k++) writeFileSync(join(dir, 'dist', `out${k}.js`), `// ${tag} ${k}\n`);
  writeFileSync(join(dir, `notes-${tag}.md`), 'notes\n');
}

/** What a clone without a parked tree pays: `git checkout` of the tip into a clone that has the objects. */
function checkoutAlone(mirror: string, dir: string): number {
  sh(dirname(dir), 'git', 'clone', '-q', '--no-checkout', '--no-hardlinks', mirror, dir);
  const t0 = performance.now();
  sh(dir, 'git', 'checkout', '-q', '-B', 'goal/x', 'origin/main');
  const took = performance.now() - t0;
  rmSync(dir, { recursive: true, force: true });
  return took;
}

/** The history, written with fast-import (500 `git commit`s would dominate the bench's runtime). */
function makeHistory(root: string): string {
  const bare = join(root, 'origin.git');
  sh(root, 'git', 'init', '-q', '--bare', '--initial-branch=main', bare);
  execFileSync('git', ['fast-import', '--quiet'], { cwd: bare, input: fastImportStream(), stdio: ['pipe', 'ignore', 'inherit'], maxBuffer: 1 << 30 });
  // Packed as a server keeps it (gc'd, fresh deltas), so the clone measures transfer, not our generator.
  sh(bare, 'git', 'repack', '-a', '-d', '-f', '-q');
  return bare;
}

/**
 * Source-like files in nested folders (2-8 KB each); every commit edits a few lines in 4 to 12
 * files, and every fifth adds a file, the way a busy project's history grows.
 */
function fastImportStream(): Buffer {
  let seed = 42;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const words = Array.from(
    { length: 400 },
    (_, i) =>
      `${['get', 'set', 'load', 'parse', 'make', 'check', 'read', 'write'][i % 8]}${['User', 'Task', 'Goal', 'Spec', 'Config', 'Queue', 'Lease', 'Branch', 'Commit', 'Item'][(i >> 3) % 10]}${i >> 6 || ''}`,
  );
  const line = () =>
    `${'  '.repeat(rnd(4))}${['const', 'let', 'return', 'if (', 'await', 'export function'][rnd(6)]} ${Array.from({ length: 2 + rnd(5) }, () => words[rnd(words.length)]).join(rnd(2) ? '.' : ' ')}(${rnd(1000)});`;
  const files: string[][] = [];
  const paths: string[] = [];
  const addFile = () => {
    const i = paths.length;
    paths.push(`packages/p${i % 6}/src/m${(i >> 3) % 15}/part${(i >> 5) % 4}/file${i}.ts`);
    files.push(Array.from({ length: 60 + rnd(140) }, line));
    return i;
  };
  for (let i = 0; i < FILES - COMMITS / 5; i++) addFile();
  const out: Buffer[] = [];
  const data = (s: string) => {
    const b = Buffer.from(s);
    out.push(Buffer.from(`data ${b.length}\n`), b, Buffer.from('\n'));
  };
  for (let c = 0; c < COMMITS; c++) {
    out.push(Buffer.from(`commit refs/heads/main\ncommitter Dev <dev@example.com> ${1_700_000_000 + c * 3600} +0000\n`));
    data(`change ${c}: adjust ${words[rnd(words.length)]}\n\nWhy this change was needed, in a sentence or two.\n`);
    let touched: number[];
    if (c === 0) touched = files.map((_, i) => i);
    else {
      touched = Array.from({ length: 4 + rnd(9) }, () => rnd(files.length));
      for (const i of touched) for (let k = 0; k < 1 + rnd(4); k++) files[i]!.splice(rnd(files[i]!.length), rnd(3), ...Array.from({ length: 1 + rnd(3) }, line));
      if (c % 5 === 0) touched.push(addFile());
    }
    for (const i of new Set(touched)) {
      out.push(Buffer.from(`M 100644 inline ${paths[i]}\n`));
      data(`${files[i]!.join('\n')}\n`);
    }
    out.push(Buffer.from('\n'));
  }
  return Buffer.concat(out);
}

function sh(cwd: string, cmd: string, ...args: string[]): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}
