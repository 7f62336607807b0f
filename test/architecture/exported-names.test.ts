import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * One name, one meaning: no exported name is defined in two files of src/ (re-exports aside), so
 * an import says which thing it means and a search finds one definition.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const hasModifier = (node: ts.Node, kind: ts.SyntaxKind): boolean => ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);
/** Exported by name (a default export's name is the module's own). */
const exported = (node: ts.Node): boolean => hasModifier(node, ts.SyntaxKind.ExportKeyword) && !hasModifier(node, ts.SyntaxKind.DefaultKeyword);

/** The names a module imports: exporting one of them again defines nothing. */
function importedNames(file: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const s of file.statements) {
    const clause = ts.isImportDeclaration(s) ? s.importClause : undefined;
    if (!clause) continue;
    if (clause.name) names.add(clause.name.text);
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
    if (bindings && ts.isNamedImports(bindings)) for (const e of bindings.elements) names.add(e.name.text);
  }
  return names;
}

/** The names a module defines and exports: declarations, and `export { local as name }` of its own (not `export … from`, nor of an import). */
function exportedNames(source: string, fileName = 'module.ts'): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const names = new Set<string>();
  const imported = importedNames(file);
  for (const s of file.statements) {
    if (ts.isExportDeclaration(s)) {
      if (s.moduleSpecifier || !s.exportClause || !ts.isNamedExports(s.exportClause)) continue;
      for (const e of s.exportClause.elements) if (!imported.has((e.propertyName ?? e.name).text)) names.add(e.name.text);
      continue;
    }
    if (!exported(s)) continue;
    if (ts.isVariableStatement(s)) {
      for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) names.add(d.name.text);
    } else if (
      (ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s) || ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s) || ts.isEnumDeclaration(s) || ts.isModuleDeclaration(s)) &&
      s.name &&
      ts.isIdentifier(s.name)
    ) {
      names.add(s.name.text);
    }
  }
  return [...names];
}

/** Exported name → the src/ files that define it, for names defined in more than one. */
function definedTwice(): Map<string, string[]> {
  const where = new Map<string, string[]>();
  for (const path of sourceFiles(SRC)) {
    for (const name of exportedNames(readFileSync(path, 'utf8'), path)) where.set(name, [...(where.get(name) ?? []), relative(ROOT, path)]);
  }
  return new Map([...where].filter(([, files]) => files.length > 1).sort(([a], [b]) => a.localeCompare(b)));
}

describe('exported names in src/', () => {
  const twice = definedTwice();

  it('no exported name is defined in two files', () => {
    const offending = [...twice].map(([name, files]) => `${name}: ${files.join(', ')}`);
    expect(offending).toEqual([]);
  });

  it('finds exported declarations and local re-exports, not re-exports from elsewhere', () => {
    const source = `export const a = 1, b = 2;
      export function c() {}
      export async function* d() {}
      export class E {}
      export interface F {}
      export type G = string;
      export enum H { X }
      const i = 1;
      export { i as J };
      export { k } from './k.js';
      import { o, p as q } from './o.js';
      export { o, q as R };
      export type { L } from './l.js';
      export default function m() {}
      function n() {}`;
    expect(exportedNames(source).sort()).toEqual(['E', 'F', 'G', 'H', 'J', 'a', 'b', 'c', 'd']);
  });
});
