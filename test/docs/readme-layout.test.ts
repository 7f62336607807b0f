import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readDoc } from './markdown.js';

// The README's layout paragraph (Development) names every folder of src/ and of the repository,
// and names no folder that is not there.

function layoutParagraph(): string {
  const readme = readDoc('README.md');
  const start = readme.indexOf('\nLayout (');
  expect(start, 'README has no "Layout (" paragraph').toBeGreaterThan(0);
  const end = readme.indexOf('\n\n', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

const dirs = (path: string) =>
  readdirSync(join(ROOT, path), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);

describe("the README's layout paragraph", () => {
  it('names every folder of src/', () => {
    const text = layoutParagraph();
    expect(dirs('src').filter((d) => !text.includes(`\`src/${d}\``))).toEqual([]);
  });

  it("names every folder of the repository's own (not dependencies, builds or git)", () => {
    const text = layoutParagraph();
    const own = dirs('.').filter((d) => !['node_modules', 'dist', '.git'].includes(d));
    expect(own.filter((d) => !text.includes(`\`${d}/\``))).toEqual([]);
  });

  it('names only folders that exist', () => {
    const named = [...layoutParagraph().matchAll(/`((?:src|test)\/[\w/-]+?)\/?`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(15);
    expect(named.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});
