import { describe, expect, it } from 'vitest';
import { MERMAID_MAX_BYTES, renderStatus } from '../../src/steering/report/status-comment.js';
import { liveReferences } from '../helpers/github-references.js';
import { snapshot } from './report/fixtures.js';
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
});
