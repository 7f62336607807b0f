import { describe, expect, it } from 'vitest';
import { parseGoalSpec } from '../../src/goal/parse.js';
import { mermaidGraph, orderedChecklist } from '../../src/goal/render.js';
import { seedGoalJson } from '../helpers/spec-builders.js';

const task = (id: string, title: string, dependencies: string[] = []) => ({ id, title, dependencies });

/** The label text of every node, by node name. */
function labels(graph: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of graph.matchAll(/^\s+(\w+)\["(.*)"\]$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** Edges as pairs of labels' task ids (`from -> to`). */
function edges(graph: string): string[] {
  const byNode = new Map([...labels(graph)].map(([node, label]) => [node, label.split(':')[0]!]));
  return [...graph.matchAll(/^\s+(\w+) --> (\w+)$/gm)].map((m) => `${byNode.get(m[1]!)} -> ${byNode.get(m[2]!)}`);
}

describe('mermaidGraph', () => {
  const tasks = [task('a', 'First'), task('b', 'Second', ['a']), task('c', 'Third', ['a', 'b'])];

  it('is a mermaid flowchart with one node per task, labelled with id and title', () => {
    const graph = mermaidGraph(tasks);
    expect(graph.split('\n')[0]).toMatch(/^graph (TD|TB|LR)$/);
    expect([...labels(graph).values()]).toEqual(['a: First', 'b: Second', 'c: Third']);
  });

  it('draws an edge from each dependency to its dependent', () => {
    expect(edges(mermaidGraph(tasks)).sort()).toEqual(['a -> b', 'a -> c', 'b -> c']);
  });

  it('has no colours without statuses, and colours nodes by state with them', () => {
    expect(mermaidGraph(tasks)).not.toMatch(/classDef|class /);
    const graph = mermaidGraph([
      { ...tasks[0]!, status: 'done' as const },
      { ...tasks[1]!, status: 'escalated' as const },
      { ...tasks[2]!, status: 'pending' as const },
    ]);
    const nodeOf = new Map([...labels(graph)].map(([node, label]) => [label.split(':')[0]!, node]));
    const classOf = new Map([...graph.matchAll(/^\s+class (\w+) (\w+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const defined = new Set([...graph.matchAll(/^\s+classDef (\w+) /gm)].map((m) => m[1]!));
    const classes = ['a', 'b', 'c'].map((id) => classOf.get(nodeOf.get(id)!));
    expect(classes.every((c) => c !== undefined && defined.has(c))).toBe(true);
    expect(new Set(classes).size).toBe(3);
  });

  it('keeps untrusted titles inside their label', () => {
    const graph = mermaidGraph([task('x', 'evil"] --> y\n<script>alert(1)</script> [b] {c} |d| `e`')]);
    const [label] = [...labels(graph).values()];
    expect(label).toBeDefined();
    expect(label).not.toMatch(/["<>[\]{}|`\n]/);
    expect(graph.split('\n')).toHaveLength(2);
    expect(graph).not.toContain('-->');
  });

  it('makes references, mentions, entities, hidden characters and cuts in a label inert, and bounds it', () => {
    const graph = mermaidGraph([task('x', 'fixes #1, closes org/other#2 @someone #lt;b#gt; https://evil www.evil.io \u202eevil\u200b'), task('y', '😀'.repeat(100))]);
    const [x, y] = [...labels(graph).values()];
    // Outside mermaid's own entity codes: no `#`, no `@`, no URL, no hidden character.
    expect(x!.replace(/#(35|64|quot|lt|gt);/g, '')).not.toMatch(/[#@]|:\/\/|www\.|[\u202e\u200b]/);
    expect(x).not.toMatch(/#lt;b/);
    // Mermaid shows #35; as # and #64; as @: the label reads as written.
    expect(
      x!
        .replace(/#35;/g, '#')
        .replace(/#64;/g, '@')
        .replace(/\u2060/g, ''),
    ).toBe('x: fixes #1, closes org/other#2 @someone #lt;b#gt; https://evil www.evil.io evil');
    expect(y!.length).toBeLessThanOrEqual(101);
    expect(y).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('renders the seed example as a chain', () => {
    const spec = parseGoalSpec(seedGoalJson());
    expect(edges(mermaidGraph(spec.tasks))).toEqual(['task-01 -> task-02', 'task-02 -> task-03', 'task-03 -> task-04', 'task-04 -> task-05']);
  });
});

describe('orderedChecklist', () => {
  it('numbers the tasks in the order the loop takes them, with their dependencies', () => {
    const list = orderedChecklist([task('c', 'Third', ['b']), task('a', 'First'), task('b', 'Second', ['a'])]);
    const rows = list.split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/^1\. a\s+First$/);
    expect(rows[1]).toMatch(/^2\. b\s+Second\s+\(after a\)$/);
    expect(rows[2]).toMatch(/^3\. c\s+Third\s+\(after b\)$/);
  });

  it('puts a multi-line title on one line', () => {
    expect(orderedChecklist([task('a', 'two\nlines')])).toMatch(/^1\. a\s+two lines$/);
  });
});
