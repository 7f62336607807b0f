import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * What `node dist/src/cli/main.js` loads before a command runs: main.ts and what it imports once
 * the process title is rewritten (its dynamic imports), then their static run-time imports.
 */
async function loadedAtStart(): Promise<Set<string>> {
  const { output } = await cruise(['src/cli/main.ts'], { baseDir: ROOT, doNotFollow: { path: 'node_modules' }, tsPreCompilationDeps: true }, undefined, {
    tsConfig: extractTSConfig(`${ROOT}/tsconfig.json`),
  });
  const modules = new Map((output as ICruiseResult).modules.map((m) => [m.source, m]));
  const seen = new Set<string>();
  const walk = (source: string, followDynamic: boolean) => {
    if (seen.has(source)) return;
    seen.add(source);
    for (const d of modules.get(source)?.dependencies ?? []) {
      if (d.dependencyTypes.some((t) => t === 'type-only' || t === 'type-import')) continue;
      if (!followDynamic && d.dependencyTypes.includes('dynamic-import')) continue;
      walk(d.resolved, false);
    }
  };
  walk('src/cli/main.ts', true);
  return seen;
}

describe('the CLI at start-up', () => {
  it('loads only the command definitions and commander: --help and a mistyped flag answer without Probot, the stores, zod or the model SDK', async () => {
    const loaded = [...(await loadedAtStart())];
    // The walk did reach the command definitions (it would pass vacuously if it stopped at main.ts).
    expect(loaded).toEqual(expect.arrayContaining(['src/cli/program.ts', 'src/cli/commands/run.ts', 'src/cli/commands/serve.ts']));
    const heavy = loaded.filter((m) => /node_modules\/(probot|zod|yaml|@anthropic-ai|@modelcontextprotocol|better-sqlite3|pg|pg-boss|pino|execa|@octokit)\//.test(m));
    expect(heavy).toEqual([]);
    expect(loaded.filter((m) => /^src\/cli\/actions\//.test(m))).toEqual([]);
  });
});
