import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/ports/sandbox.js';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { workspaceSignature } from '../../src/sandbox/stall-watch.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

const sandboxes: [string, () => Sandbox][] = [
  ['process', () => new ProcessSandbox()],
  ['bwrap', () => jail()],
];

describe.each(sandboxes)('a stalled command (%s sandbox)', (_name, make) => {
  const stallMs = 1500;

  it('kills a command that prints nothing, writes nothing and uses no CPU, long before its timeout', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(make(), ws, 'echo start; sleep 30; echo never', { stallMs, timeoutMs: 60_000 });
    expect(result).toMatchObject({ stalled: true, timedOut: false, exitCode: null, aborted: false });
    expect(result.output).toContain('start');
    expect(result.output).not.toContain('never');
  });

  // `nap` waits 500 ms without starting a process (a read with a timeout on a FIFO nobody
  // writes), so each case shows one signal alone: no new process appears once it runs.
  const NAP = 'f=$(mktemp -u); mkfifo "$f"; exec 4<>"$f"; rm "$f"; nap() { read -t 0.5 -u 4 || true; }';
  it.each([
    ['prints a dot every 500 ms', `${NAP}; for i in 1 2 3 4 5 6 7 8; do printf .; nap; done; echo done`],
    ['burns CPU silently', 'end=$((SECONDS + 4)); while [ $SECONDS -lt $end ]; do :; done; echo done'],
    ['writes a file in the workspace every 500 ms silently', `${NAP}; for i in 1 2 3 4 5 6 7 8; do echo $i >> progress.txt; nap; done; echo done`],
    ['downloads silently into a store outside the workspace', `${NAP}; exec 5>"$(mktemp)"; for i in 1 2 3 4 5 6 7 8; do printf '%*s' 262144 '' >&5; nap; done; echo done`],
    ['starts a process every 500 ms silently', 'for i in 1 2 3 4 5 6 7 8; do sleep 0.5; done; echo done'],
  ])('does not kill one that %s', async (_what, command) => {
    const { ws } = await jailRoot();
    const result = await runIn(make(), ws, command, { stallMs, timeoutMs: 60_000 });
    expect(result.stalled).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain('done');
  });

  it('kills one that only naps: waiting on nothing is no activity (the cases above show one signal each)', async () => {
    const { ws } = await jailRoot();
    const result = await runIn(make(), ws, `${NAP}; for i in $(seq 60); do nap; done; echo never`, { stallMs, timeoutMs: 60_000 });
    expect(result).toMatchObject({ stalled: true, exitCode: null });
    expect(result.output).not.toContain('never');
  });
});

describe('workspaceSignature', () => {
  it('changes when a file is added, grown or touched, not otherwise; .git is left out', async () => {
    const { ws } = await jailRoot();
    const { mkdir, writeFile, appendFile, utimes } = await import('node:fs/promises');
    await mkdir(`${ws}/.git`);
    await mkdir(`${ws}/a/b`, { recursive: true });
    await writeFile(`${ws}/a/b/f`, 'x');
    const first = workspaceSignature(ws);
    expect(workspaceSignature(ws)).toBe(first);
    await writeFile(`${ws}/.git/index`, 'y');
    await utimes(`${ws}/.git`, 1, 1);
    await utimes(ws, 1, 1);
    const base = workspaceSignature(ws);
    await appendFile(`${ws}/a/b/f`, 'more');
    await utimes(`${ws}/a/b/f`, 1, 1);
    const grown = workspaceSignature(ws);
    expect(grown).not.toBe(base);
    // Rewritten in place, same size: its mtime moves.
    const later = Date.now() / 1000 + 60;
    await utimes(`${ws}/a/b/f`, later, later);
    expect(workspaceSignature(ws)).not.toBe(grown);
  });

  it('looks at a bounded number of entries', async () => {
    const { ws } = await jailRoot();
    const { writeFile } = await import('node:fs/promises');
    for (let i = 0; i < 20; i++) await writeFile(`${ws}/f${String(i).padStart(2, '0')}`, 'x');
    expect(workspaceSignature(ws, 5).split(':')[1]).toBe('5');
  });
});
