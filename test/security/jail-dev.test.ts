import { chmodSync, existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jail, jailRoot, nodeScript, runIn } from '../helpers/sandbox-jail.js';

const MiB = 1024 ** 2;
const ATTEMPT = 256 * MiB;
/** The most any place under the jail's /dev may hold (its /dev/shm). */
const CAP = 64 * MiB;

// Tries to fill /dev, /dev/shm and every other directory under /dev (symlinks not followed),
// 1 MiB at a time up to 256 MiB each, and prints one `FILL <dir> <bytes> <error code>` per
// directory; each file is removed afterwards so the attempts do not add up.
const FILL = `
const fs = require('fs');
const dirs = ['/dev'];
for (let i = 0; i < dirs.length; i++) {
  let entries = [];
  try { entries = fs.readdirSync(dirs[i], { withFileTypes: true }); } catch {}
  for (const e of entries) if (e.isDirectory()) dirs.push(dirs[i] + '/' + e.name);
}
const chunk = Buffer.alloc(${MiB}, 120);
for (const dir of dirs) {
  const path = dir + '/goal-loop-fill';
  let written = 0, code = 'none', fd;
  try {
    fd = fs.openSync(path, 'w');
    while (written < ${ATTEMPT}) written += fs.writeSync(fd, chunk);
  } catch (e) { code = e.code; }
  if (fd !== undefined) { try { written = fs.fstatSync(fd).size; fs.closeSync(fd); fs.rmSync(path); } catch {} }
  console.log('FILL ' + dir + ' ' + written + ' ' + code);
}`;

// What ordinary builds use from /dev.
const USE = [
  'echo discarded > /dev/null && echo NULL-OK',
  'head -c 32 /dev/urandom | wc -c',
  'head -c 8 /dev/zero | wc -c',
  'exec 3< /etc/hosts && head -n1 /dev/fd/3 >/dev/null && echo FD-OK',
  // Through a pipe the jail made, and straight into the captured output: a FIFO the bot
  // (another uid, when root) owns, which the jail reopens through /proc/self/fd.
  '{ echo STDOUT-OK > /dev/stdout; } | cat',
  '{ echo STDERR-OK > /dev/stderr; } 2>&1 | cat',
  'echo DIRECT-STDOUT-OK > /dev/stdout',
  'echo DIRECT-STDERR-OK > /dev/stderr',
  nodeScript("require('fs').writeFileSync('/dev/shm/node-x', 'y'); console.log('NODE-' + require('fs').readFileSync('/dev/shm/node-x', 'utf8'))"),
  'if command -v python3 >/dev/null; then python3 -c ' +
    `'import multiprocessing as m
from multiprocessing import shared_memory as s
b = s.SharedMemory(create=True, size=1 << 20); b.close(); b.unlink()
with m.Pool(2) as p: print("PY", sum(p.map(abs, [-1, -2, -3])))'; else echo NO-PYTHON; fi`,
  'echo end',
].join('; ');

function fills(output: string): Map<string, { bytes: number; code: string }> {
  const out = new Map<string, { bytes: number; code: string }>();
  for (const m of output.matchAll(/^FILL (\S+) (\d+) (\S+)$/gm)) out.set(m[1]!, { bytes: Number(m[2]), code: m[3]! });
  return out;
}

async function reachableRoot() {
  const dirs = await jailRoot();
  chmodSync(dirs.root, 0o755); // `direct` runs bwrap as the jail uid, which must reach the workspace
  return dirs;
}

describe.each(['nested', 'direct'] as const)('the jail /dev (%s)', (jailMode) => {
  it('accepts no more than a small bounded number of bytes anywhere under it', async () => {
    const { ws } = await reachableRoot();
    const result = await runIn(jail({ jailMode }), ws, `${nodeScript(FILL)}; echo end`, { timeoutMs: 120_000 });
    expect(result.output).toContain('end');
    const found = fills(result.output);
    expect([...found.keys()]).toEqual(expect.arrayContaining(['/dev', '/dev/shm']));
    for (const [dir, { bytes, code }] of found) {
      expect(bytes, `${dir}: ${bytes} bytes (${code})`).toBeLessThanOrEqual(CAP);
      expect(['ENOSPC', 'EROFS', 'EACCES', 'EPERM'], `${dir} stopped with ${code}`).toContain(code);
    }
    // /dev/shm stays usable up to its cap (POSIX semaphores and shared memory live there).
    expect(found.get('/dev/shm')!.bytes).toBeGreaterThan(CAP / 2);
  });

  it('still gives builds /dev/null, /dev/urandom, /dev/fd, the stdio links and /dev/shm', async () => {
    const { ws } = await reachableRoot();
    const result = await runIn(jail({ jailMode }), ws, USE);
    expect(result.output).toContain('NULL-OK');
    expect(result.output).toMatch(/^32$/m);
    expect(result.output).toMatch(/^8$/m);
    expect(result.output).toContain('FD-OK');
    expect(result.output).toContain('STDOUT-OK');
    expect(result.output).toContain('STDERR-OK');
    expect(result.output).toContain('DIRECT-STDOUT-OK');
    expect(result.output).toContain('DIRECT-STDERR-OK');
    expect(result.output).toContain('NODE-y');
    expect(result.output).toContain(existsSync('/usr/bin/python3') ? 'PY 6' : 'NO-PYTHON');
    expect(result.output).toContain('end');
  });
});
