import { describe, expect, it } from 'vitest';
import { configLimits, parseRepoConfig, parseRepoConfigText, REPO_CONFIG_PATH, RepoConfigError, repoConfigJsonSchema } from '../../src/config/repo-config.js';
import { resolveLimits } from '../../src/goal/limits.js';

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RepoConfigError);
    return (err as RepoConfigError).problems;
  }
  throw new Error('expected the config to be rejected');
}

describe('repo config', () => {
  it('lives in .github/goal-loop.yml', () => {
    expect(REPO_CONFIG_PATH).toBe('.github/goal-loop.yml');
  });

  it('no file gives the documented defaults', () => {
    const c = parseRepoConfig(undefined);
    expect(c).toMatchObject({
      label: 'goal',
      require_plan_approval: false,
      setup: [],
      gate: [],
      protected_paths: ['.github/workflows/**', '.github/goal-loop.yml'],
      sandbox: 'bwrap',
      network: 'none',
      mcp_servers: [],
    });
    expect(configLimits(c)).toEqual({});
    expect(parseRepoConfig(null)).toEqual(c);
    expect(parseRepoConfigText('')).toEqual(c);
    expect(parseRepoConfigText('# nothing but a comment\n')).toEqual(c);
  });

  it('reads every documented key', () => {
    const c = parseRepoConfigText(
      [
        'label: autopilot',
        'require_plan_approval: true',
        'setup: [npm ci]',
        'gate: [npm run build, npm test]',
        'max_retries: 4',
        'max_iterations: 30',
        'error_threshold: 2',
        'cost_cap_usd: 2.5',
        'max_wall_minutes: 15',
        'task_timeout_s: 90',
        'max_turns: 60',
        'max_risk: medium',
        'protected_paths: ["infra/**"]',
        'sandbox: process',
        'network: setup',
        'model: claude-sonnet-4-5',
        'mcp_servers:',
        '  - name: docs',
        '    command: docs-mcp',
        '    args: [--stdio]',
        '    env: [DOCS_TOKEN]',
      ].join('\n'),
    );
    expect(c).toMatchObject({
      label: 'autopilot',
      require_plan_approval: true,
      setup: ['npm ci'],
      gate: ['npm run build', 'npm test'],
      protected_paths: ['infra/**', '.github/goal-loop.yml'],
      sandbox: 'process',
      network: 'setup',
      model: 'claude-sonnet-4-5',
      mcp_servers: [{ name: 'docs', command: 'docs-mcp', args: ['--stdio'], env: ['DOCS_TOKEN'] }],
    });
    expect(configLimits(c)).toEqual({
      max_retries: 4,
      max_iterations: 30,
      error_threshold: 2,
      cost_cap_usd: 2.5,
      max_wall_minutes: 15,
      task_timeout_s: 90,
      max_turns: 60,
      max_risk: 'medium',
    });
  });

  it('its limits sit between the defaults and the goal spec', () => {
    const c = parseRepoConfig({ max_retries: 4, cost_cap_usd: 1 });
    expect(resolveLimits(configLimits(c), { max_retries: 2 })).toMatchObject({ max_retries: 2, cost_cap_usd: 1, max_iterations: 50 });
  });

  it('an unknown key is named, not a crash, with the known key a typo likely meant', () => {
    const p = problems(() => parseRepoConfig({ lable: 'goal', max_retries: 2 }));
    expect(p).toEqual(['(root): unknown key lable (did you mean label?)']);
    const nested = problems(() => parseRepoConfig({ setpu: [], color: 'red', mcp_servers: [{ name: 'db', command: 'db-mcp', argz: [] }] }));
    expect(nested).toEqual(['mcp_servers.0: unknown key argz (did you mean args?)', '(root): unknown keys setpu (did you mean setup?), color']);
  });

  it('bad values name their keys, all at once', () => {
    const p = problems(() => parseRepoConfig({ max_retries: 0, sandbox: 'docker', network: 'all', mcp_servers: [{ name: 'x y', command: 'c' }] }));
    expect(p.join('\n')).toMatch(/max_retries/);
    expect(p.join('\n')).toMatch(/sandbox/);
    expect(p.join('\n')).toMatch(/network/);
    expect(p.join('\n')).toMatch(/mcp_servers.*name/);
    expect(p).toHaveLength(4);
  });

  it('the error message is short and lists the problems under the file name', () => {
    try {
      parseRepoConfig({ label: '' });
      expect.fail('expected an error');
    } catch (err) {
      expect((err as Error).message.split('\n')[0]).toContain('.github/goal-loop.yml');
      expect((err as Error).message).toContain('label');
      expect((err as Error).message).not.toMatch(/\n\s+at /);
    }
  });

  it('broken YAML is a RepoConfigError, not a crash', () => {
    expect(problems(() => parseRepoConfigText('label: [unclosed\nsetup: x\n')).length).toBeGreaterThan(0);
  });

  it('a document that is not a mapping is refused', () => {
    expect(problems(() => parseRepoConfigText('- a\n- b\n')).length).toBeGreaterThan(0);
  });

  it('the default protected paths are not shared between parses', () => {
    const first = parseRepoConfig(undefined);
    first.protected_paths.push('mutated/**');
    expect(parseRepoConfig(undefined).protected_paths).toEqual(['.github/workflows/**', '.github/goal-loop.yml']);
  });

  it('publishes a JSON schema with every key for editors', () => {
    const schema = repoConfigJsonSchema() as { type?: string; properties?: Record<string, unknown>; additionalProperties?: unknown };
    expect(schema.type).toBe('object');
    expect(Object.keys(schema.properties ?? {}).sort()).toEqual(
      [
        'label',
        'require_plan_approval',
        'setup',
        'setup_timeout_s',
        'setup_stall_s',
        'setup_env',
        'setup_inputs',
        'gate',
        'max_retries',
        'max_iterations',
        'error_threshold',
        'cost_cap_usd',
        'max_wall_minutes',
        'task_timeout_s',
        'max_turns',
        'max_same_failure',
        'max_risk',
        'verification_baseline',
        'follow_base',
        'max_ci_fixes',
        'checks_grace_s',
        'test_paths',
        'verify_with_base_tests',
        'on_escalation',
        'protected_paths',
        'sandbox',
        'network',
        'model',
        'mcp_servers',
      ].sort(),
    );
    expect(schema.additionalProperties).toBe(false);
  });
});
