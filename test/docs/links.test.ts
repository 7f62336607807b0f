import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, githubSlug, links, ROOT, readDoc } from './markdown.js';

// Every link between the documents resolves: an anchor names a heading that exists (by GitHub's
// rule for anchors), and a relative path names a file of this repository.
const DOCS = [
  'README.md',
  'SECURITY.md',
  'ARCHITECTURE.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function brokenLinks(doc: string): string[] {
  const md = readDoc(doc);
  const broken: string[] = [];
  for (const { no, target } of links(md)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like: not ours to check
    const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const file = path ? join(dirname(join(ROOT, doc)), decodeURIComponent(path)) : join(ROOT, doc);
    const where = `${doc}:${no}: ${target}`;
    if (!existsSync(file)) {
      broken.push(`${where}: no file ${relative(ROOT, file)}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(file).isDirectory() || !file.endsWith('.md')) broken.push(`${where}: an anchor into a file that has no headings`);
    else if (!anchors(readDoc(relative(ROOT, file))).has(decodeURIComponent(anchor))) broken.push(`${where}: no heading with that anchor in ${relative(ROOT, file)}`);
  }
  return broken;
}

describe('links between the documents', () => {
  it.each(DOCS)('%s: every relative link and anchor resolves', (doc) => {
    expect(brokenLinks(doc)).toEqual([]);
  });

  it('the documents this checks are all there (a renamed one would be skipped silently)', () => {
    for (const doc of DOCS) expect(existsSync(join(ROOT, doc)), doc).toBe(true);
    expect(DOCS).toContain('docs/getting-started.md');
  });
});

/** Files that point a reader at a README section by its name: `README, "Section"`. */
function filesNamingSections(): string[] {
  const src = (readdirSync(join(ROOT, 'src'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => `src/${f}`);
  return [...src, '.env.example', 'Dockerfile', 'app.yml', ...DOCS].filter((f) => existsSync(join(ROOT, f)));
}

describe('README sections named in messages and examples', () => {
  it('every `README, "…"` names the start of a README heading', () => {
    const headings = readDoc('README.md')
      .split('\n')
      .map((l) => /^#{1,6}\s+(.*)$/.exec(l)?.[1]?.replace(/`/g, ''))
      .filter((h): h is string => h !== undefined);
    const missing: string[] = [];
    let named = 0;
    for (const file of filesNamingSections()) {
      for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(/README(?:'s)?,? (?:section )?"([^"]+)"/g)) {
        named++;
        if (!headings.some((h) => h.startsWith(m[1]!))) missing.push(`${file}: README, "${m[1]}"`);
      }
    }
    expect(missing).toEqual([]);
    expect(named).toBeGreaterThan(0);
  });
});

describe("GitHub's anchor rule, as this test applies it", () => {
  it.each([
    ['`.env` is not picked up', 'env-is-not-picked-up'],
    ['A task fails at once with exit 127 (`command not found`)', 'a-task-fails-at-once-with-exit-127-command-not-found'],
    ['Durable work: one process, or many machines', 'durable-work-one-process-or-many-machines'],
    ['Crash boundaries: a write, then a side effect', 'crash-boundaries-a-write-then-a-side-effect'],
    ['What `run` keeps: mirrors, setup_inputs & co.', 'what-run-keeps-mirrors-setup_inputs--co'],
    ['The [App](app.yml) → first comment', 'the-app--first-comment'],
  ])('%s → #%s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  it('a repeated heading gets -1, -2, as on GitHub', () => {
    expect([...anchors('# Notes\n## Notes\n### Notes\n```\n# Notes\n```\n')]).toEqual(['notes', 'notes-1', 'notes-2']);
  });

  it('a link inside code is not a link', () => {
    expect(links('`[a](#nowhere)`\n```\n[b](#nowhere)\n```\n[c](#somewhere)\n').map((l) => l.target)).toEqual(['#somewhere']);
  });
});
