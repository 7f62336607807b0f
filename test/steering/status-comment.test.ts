import { describe, expect, it } from 'vitest';
import { groupAttempts, taskProofs } from '../../src/steering/report/record.js';
import { CHECKLIST_MAX_BYTES, checklist, MERMAID_MAX_BYTES, renderStatus } from '../../src/steering/report/status-comment.js';
import { liveReferences } from '../helpers/github-references.js';
import { evidenceGoal, SHA, snapshot } from './report/fixtures.js';
import { prose } from './report/markdown-structure.js';

const LINKS = { repoUrl: 'https://github.com/octo-org/widgets' };
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const graphOf = (md: string) => /```mermaid\n([\s\S]*?)\n```/.exec(md)?.[1];

describe('the status comment: bounded, and inert outside its own markup', () => {
  it.each([
    ['long titles of #', (i: number) => ({ id: `t${i}`, title: '#'.repeat(300) })],
    ['long ids, each depending on the ones before', (i: number) => ({ id: `${'x'.repeat(90)}-${i}`, title: 'a', dependencies: i ? [`${'x'.repeat(90)}-${i - 1}`, `${'x'.repeat(90)}-0`] : [] })],
  ])("%s: 800 tasks stay within GitHub's 65,536 bytes, the graph within its own room", (_, make) => {
    const s = snapshot(Array.from({ length: 800 }, (_slot, i) => make(i)));
    const md = renderStatus({ ...s, objective: '@octocat '.repeat(500) }, LINKS);
    expect(bytes(md)).toBeLessThanOrEqual(65_536);
    const graph = graphOf(md);
    if (graph) expect(bytes(graph)).toBeLessThanOrEqual(MERMAID_MAX_BYTES);
    else expect(md).toMatch(/too large to draw/);
  });

  it('a graph too large with titles is drawn with the ids alone', () => {
    const s = snapshot(Array.from({ length: 150 }, (_, i) => ({ id: `t${i}`, title: '@'.repeat(300) })));
    const graph = graphOf(renderStatus(s, LINKS))!;
    expect(graph).toMatch(/^ {2}t0\["t0"\]$/m);
    expect(bytes(graph)).toBeLessThanOrEqual(MERMAID_MAX_BYTES);
  });

  it('a small graph keeps its titles, and the prose around it mentions and references nothing', () => {
    const evil = '@octocat [x](https://evil) ![i](https://evil/i.png) Fixes #1';
    const s = snapshot([
      { id: 'a', title: evil },
      { id: 'b', title: evil, dependencies: ['a'] },
    ]);
    const md = renderStatus({ ...s, objective: evil, stopReason: evil, state: 'STOPPED' }, LINKS);
    expect(graphOf(md)).toMatch(/t0\["a: #64;octocat/);
    expect(liveReferences(prose(md).replace(/\(https:\/\/github\.com\/octo-org\/widgets\/[^)]*\)/g, ''))).toEqual([]);
  });

  it("a done task's checklist line carries its evidence; a task whose verification passed before it ran (expect red) gets ⚠ and a line saying so", () => {
    const { s, rows } = evidenceGoal();
    const md = renderStatus(s, LINKS, [], undefined, taskProofs(groupAttempts(rows), s));
    const lines = md.split('\n');
    const at = (id: string) => lines.findIndex((l) => l.startsWith(`- [${id === 'strict' || id === 'next' ? ' ' : 'x'}] ${id} `));
    expect(lines[at('api')]).toBe(`- [x] api Add the API ([a1a1a1a](${LINKS.repoUrl}/commit/${SHA.api})) · \`red → green\``);
    expect(lines[at('refactor')]).toMatch(/\) · `green → green`$/);
    expect(lines[at('refactor') + 1]).toMatch(/^- \[x\] ui /);
    expect(lines[at('ui')]).toMatch(/\) · ⚠ `green → green`$/);
    expect(lines[at('ui') + 1]).toBe("  - ⚠ its verification passed before the task ran, so it cannot show that the task's change works: review it by hand");
    expect(lines[at('docs')]).toMatch(/\) · `unchecked`$/);
    expect(lines[at('old')]).toBe(`- [x] old From before ([e5e5e5e](${LINKS.repoUrl}/commit/${SHA.old}))`);
    expect(lines[at('strict')]).toBe('- [ ] strict Strict one — escalated, attempt 1 · ⚠');
    expect(lines[at('strict') + 1]).toBe("  - ⚠ its verification passed before the task ran, so it cannot show that the task's change works");
    expect(lines[at('next')]).toBe('- [ ] next Later');
    expect(md.match(/⚠/g)).toHaveLength(4);
    // Without the record, the checklist is as it was.
    expect(renderStatus(s, LINKS)).not.toMatch(/⚠|red → green/);
  });

  it('the checklist with every task warned stays within its room', () => {
    const s = snapshot(Array.from({ length: 800 }, (_, i) => ({ id: `t${i}`, title: '#'.repeat(300), status: 'done' as const, checkpointSha: 'a'.repeat(40) })));
    const proofs = new Map(s.tasks.map((t) => [t.id, { evidence: 'green->green' as const, greenBefore: true }]));
    const md = checklist(s, LINKS, proofs);
    expect(bytes(md)).toBeLessThanOrEqual(CHECKLIST_MAX_BYTES);
    expect(md.split('\n').at(-1)).toMatch(/^- … \d+ more task\(s\)/);
  });
});

describe('the status comment: the setup line', () => {
  it.each([
    [{ status: 'running', command: 'npm ci', startedAt: 0 }, '**Setup:** running `npm ci` (12 s)'],
    [{ status: 'done', startedAt: 0, durationMs: 14_200, restored: true }, '**Setup:** done in 14 s (restored from the setup cache)'],
    [{ status: 'done', command: 'npm ci', startedAt: 0, durationMs: 14_200 }, '**Setup:** done in 14 s, `npm ci`'],
    [
      { status: 'failed', command: 'npm ci', startedAt: 0, durationMs: 60_000, failure: '`npm ci` stalled: no output, no file written, no CPU for 60s' },
      '**Setup:** failed after 60 s: \\`npm ci\\` stalled: no output, no file written, no CPU for 60s',
    ],
  ] as const)('%o', (setup, line) => {
    const md = renderStatus({ ...snapshot([{ id: 'a', title: 'A' }]), setup }, LINKS, [], undefined, undefined, 12_300);
    expect(md.split('\n')).toContain(line);
  });

  it('a command that mentions or links stays inert', () => {
    const md = renderStatus({ ...snapshot([{ id: 'a', title: 'A' }]), setup: { status: 'running', command: 'echo @octocat `x` https://evil', startedAt: 0 } }, LINKS, [], undefined, undefined, 0);
    expect(md).toContain('**Setup:** running ``echo @octocat `x` https://evil`` (0 s)');
  });

  it('no line without setup', () => {
    expect(renderStatus(snapshot([{ id: 'a', title: 'A' }]), LINKS)).not.toContain('Setup');
  });
});
