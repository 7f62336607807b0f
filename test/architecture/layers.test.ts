import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseOptions, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

async function cruiseTree(baseDir: string, tsConfig?: string): Promise<ICruiseResult> {
  const options: ICruiseOptions = { ...(await extractDepcruiseOptions(CONFIG)), baseDir };
  if (!tsConfig) delete options.tsConfig;
  const { output } = await cruise(['src'], options, undefined, tsConfig ? { tsConfig: extractTSConfig(tsConfig) } : undefined);
  return output as ICruiseResult;
}

async function cruiseWithRules(baseDir: string, tsConfig?: string): Promise<IViolation[]> {
  return (await cruiseTree(baseDir, tsConfig)).summary.violations;
}

/** The repository cruised once, for the tests that read it. */
let repoCruise: Promise<ICruiseResult> | undefined;
const cruiseRepo = () => (repoCruise ??= cruiseTree(ROOT, join(ROOT, 'tsconfig.json')));

/**
 * A subfolder that imports its parent folder while the parent imports it (run-time imports; a
 * type-only one is erased): `a/b/x.ts → a/y.ts` and `a/z.ts → a/b/w.ts`. Checked under `under`.
 */
function parentChildCycles(result: ICruiseResult, under: RegExp): string[] {
  const edges = new Set<string>();
  for (const m of result.modules) {
    if (!under.test(m.source)) continue;
    for (const d of m.dependencies) {
      if (d.dependencyTypes.includes('type-only') || !under.test(d.resolved)) continue;
      const from = dirname(m.source);
      const to = dirname(d.resolved);
      if (to.startsWith(`${from}/`) || from.startsWith(`${to}/`)) edges.add(`${from} → ${to}`);
    }
  }
  return [...edges].filter((e) => {
    const [from, to] = e.split(' → ');
    return to!.startsWith(`${from}/`) && edges.has(`${to} → ${from}`);
  });
}

/** The folders whose subfolders are kept from importing them back (the steering policy and the App). */
const NO_PARENT_CHILD_CYCLE_UNDER = /^src\/(steering|github)\//;

function describeViolation(v: IViolation): string {
  const via = v.cycle?.length ? ` (cycle: ${v.cycle.map((c) => c.name).join(' → ')})` : '';
  return `${v.from} → ${v.to}: ${v.rule.name}${via}`;
}

async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, dirname(path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}

describe('the layering of src/ (.dependency-cruiser.cjs)', () => {
  it('holds: no folder cycle, and every folder imports only the layers below it', async () => {
    const lines = (await cruiseRepo()).summary.violations.map(describeViolation);
    if (lines.length > 0) console.error(`layering violations:\n${lines.join('\n')}`);
    expect(lines).toEqual([]);
  });

  it('bites: the loop importing an adapter and two folders importing each other are violations', async () => {
    const dir = await tempDir('goal-loop-layers-');
    const files: Record<string, string> = {
      'src/workspace/git.ts': 'export const git = 1;\n',
      'src/loop/controller.ts': "import { git } from '../workspace/git.js';\nexport const run = git;\n",
      'src/goal/schema.ts': 'export const RISK = 2;\n',
      'src/config/repo-config.ts': "import { RISK } from '../goal/schema.js';\nexport const config = RISK;\n",
      'src/goal/render.ts': "import { config } from '../config/repo-config.js';\nexport const render = config;\n",
    };
    await writeTree(dir, files);
    const lines = (await cruiseWithRules(dir)).map(describeViolation);
    expect(lines).toEqual(
      expect.arrayContaining([
        'src/loop/controller.ts → src/workspace/git.ts: loop-imports-no-adapter',
        'src/goal/render.ts → src/config/repo-config.ts: goal-imports-only-shared',
        expect.stringMatching(/^src\/(goal|config) → src\/(config|goal): no-folder-circular/),
      ]),
    );
  });

  it('bites: the steering policy importing Probot, Octokit or the App is a violation; the App importing the policy is not', async () => {
    const dir = await tempDir('goal-loop-steering-layer-');
    await writeTree(dir, {
      'node_modules/probot/package.json': '{ "name": "probot", "main": "index.js" }\n',
      'node_modules/probot/index.js': 'exports.Probot = 1;\n',
      'node_modules/@octokit/rest/package.json': '{ "name": "@octokit/rest", "main": "index.js" }\n',
      'node_modules/@octokit/rest/index.js': 'exports.Octokit = 1;\n',
      'src/goal/states.ts': 'export const STATES = 1;\n',
      'src/github/octokit.ts': 'export const client = 1;\n',
      'src/github/app.ts': "import { decide } from '../steering/decide.js';\nexport const app = decide;\n",
      'src/steering/decide.ts': "import { STATES } from '../goal/states.js';\nexport const decide = STATES;\n",
      'src/steering/via-probot.ts': "import { Probot } from 'probot';\nexport const a = Probot;\n",
      'src/steering/via-octokit.ts': "import { Octokit } from '@octokit/rest';\nexport const b = Octokit;\n",
      'src/steering/via-app.ts': "import { client } from '../github/octokit.js';\nexport const c = client;\n",
    });
    const lines = (await cruiseWithRules(dir)).map(describeViolation);
    expect(lines).toEqual(
      expect.arrayContaining([
        'src/steering/via-probot.ts → node_modules/probot/index.js: steering-is-forge-neutral',
        'src/steering/via-octokit.ts → node_modules/@octokit/rest/index.js: steering-is-forge-neutral',
        'src/steering/via-app.ts → src/github/octokit.ts: steering-is-forge-neutral',
      ]),
    );
    expect(lines.filter((l) => l.startsWith('src/github/') || l.startsWith('src/steering/decide.ts'))).toEqual([]);
  });

  it('holds: no subfolder of steering/ or github/ imports its parent while the parent imports it', async () => {
    expect(parentChildCycles(await cruiseRepo(), NO_PARENT_CHILD_CYCLE_UNDER)).toEqual([]);
  });

  it('bites: a subfolder importing its parent back is found; one way, or type-only back, is not', async () => {
    const dir = await tempDir('goal-loop-parent-child-');
    await writeTree(dir, {
      'src/steering/status.ts': "import { fit } from './report/fit.js';\nexport const marker = fit;\n",
      'src/steering/report/fit.ts': 'export const fit = 1;\n',
      'src/steering/report/check.ts': "import { marker } from '../status.js';\nexport const check = marker;\n",
      'src/github/runtime.ts': "import { settings } from './server/settings.js';\nexport const runtime = settings;\n",
      'src/github/server/settings.ts': 'export const settings = 1;\n',
      'src/github/server/serve.ts': "import type { runtime } from '../runtime.js';\nexport type Serve = typeof runtime;\n",
    });
    expect(parentChildCycles(await cruiseTree(dir), NO_PARENT_CHILD_CYCLE_UNDER)).toEqual(['src/steering → src/steering/report']);
  });
});
