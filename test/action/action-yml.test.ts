import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/** action.yml against the contract of `goal-loop action`: its inputs reach the CLI as INPUT_<NAME>, its outputs are the goal's. */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A GitHub Actions expression, as the YAML writes it: `${{ body }}`. */
const expression = (body: string): string => `\${{ ${body} }}`;

interface Step {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  shell?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
  'working-directory'?: string;
}

interface ActionYml {
  name: string;
  description: string;
  branding: { icon: string; color: string };
  inputs: Record<string, { description?: string; required?: boolean; default?: string }>;
  outputs: Record<string, { description?: string; value?: string }>;
  runs: { using: string; steps: Step[] };
}

const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as ActionYml;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; engines: { node: string } };
const steps = action.runs.steps;
/** The step that runs `goal-loop action`. */
const runStep = steps.find((s) => /\bmain\.js"? action$/.test(s.run?.trim() ?? ''));

describe('action.yml', () => {
  it('is a composite action with a name, a description and branding', () => {
    expect(action.runs.using).toBe('composite');
    expect(action.name).toBe('goal-loop');
    expect(action.description.length).toBeGreaterThan(20);
    expect(action.branding.icon).toMatch(/^[a-z-]+$/);
    expect(['white', 'black', 'yellow', 'blue', 'green', 'orange', 'red', 'purple', 'gray-dark']).toContain(action.branding.color);
  });

  it('documents every input', () => {
    for (const [name, input] of Object.entries(action.inputs)) expect(input.description?.trim().length ?? 0, name).toBeGreaterThan(10);
  });

  it("has the inputs of DESIGN §9 with their defaults, the model providers' settings, and the action's own", () => {
    const defaults = Object.fromEntries(Object.entries(action.inputs).map(([name, input]) => [name, input.default]));
    expect(defaults).toEqual({
      anthropic_api_key: '',
      github_token: expression('github.token'),
      trigger_label: 'goal',
      config: '.github/goal-loop.yml',
      max_run_minutes: '300',
      bot_login: '',
      workflow: '',
      sandbox: 'bwrap',
      model: '',
      anthropic_base_url: '',
      provider: 'anthropic',
      aws_region: '',
      vertex_project_id: '',
      vertex_region: '',
    });
    // None is required: a key or another provider's credentials, never both, and the rest have defaults.
    for (const [name, input] of Object.entries(action.inputs)) expect(input.required, name).toBe(false);
  });

  it('runs the CLI entry package.json names, `action`, from the folder it installed', () => {
    expect(runStep, 'a step that runs `goal-loop action`').toBeDefined();
    expect(runStep!.run).toContain(`"$GITHUB_ACTION_PATH/${pkg.bin['goal-loop']}" action`);
    expect(runStep!.shell).toBe('bash');
  });

  it('passes every input, and nothing else, as INPUT_<NAME> to that step (a composite action gets none by itself)', () => {
    const expected = Object.fromEntries(Object.keys(action.inputs).map((name) => [`INPUT_${name.toUpperCase()}`, expression(`inputs.${name}`)]));
    const passed = Object.fromEntries(Object.entries(runStep!.env ?? {}).filter(([key]) => key.startsWith('INPUT_')));
    expect(passed).toEqual(expected);
  });

  it('puts no input into a script: inputs reach a shell only as environment variables', () => {
    for (const step of steps) expect(step.run ?? '', step.name).not.toMatch(/\$\{\{/);
  });

  it("sets up a Node the package's engines accept, then installs the lockfile in its own folder, before the run", () => {
    const setup = steps.findIndex((s) => s.uses?.startsWith('actions/setup-node@'));
    const install = steps.findIndex((s) => /\bnpm ci\b/.test(s.run ?? ''));
    const run = steps.indexOf(runStep!);
    expect(setup).toBeGreaterThanOrEqual(0);
    expect(install).toBeGreaterThan(setup);
    expect(run).toBeGreaterThan(install);
    expect(steps[install]!['working-directory']).toBe(expression('github.action_path'));
    const major = Number(steps[setup]!.with?.['node-version']);
    expect([20, 22]).toContain(major);
    expect(pkg.engines.node).toContain(`${major}.`);
  });

  it('has the four outputs of DESIGN §9, each from the run step', () => {
    expect(Object.keys(action.outputs).sort()).toEqual(['branch', 'goal_id', 'pr_number', 'state']);
    for (const [name, output] of Object.entries(action.outputs)) {
      expect(output.description?.length ?? 0, name).toBeGreaterThan(10);
      expect(output.value).toBe(expression(`steps.${runStep!.id}.outputs.${name}`));
    }
  });
});
