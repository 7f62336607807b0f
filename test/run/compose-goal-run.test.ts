import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseRepoConfig } from '../../src/config/repo-config.js';
import { DEFAULT_LIMITS } from '../../src/goal/limits.js';
import { parseGoalSpec } from '../../src/goal/parse.js';
import type { GoalSpec } from '../../src/goal/schema.js';
import type { TaskAgent } from '../../src/ports/agent.js';
import type { Forge } from '../../src/ports/forge.js';
import type { Ledger } from '../../src/ports/ledger.js';
import type { Sandbox } from '../../src/ports/sandbox.js';
import type { Workspace } from '../../src/ports/workspace.js';
import { agentDeps, composeGoalRun, configCommands, goalWorkspace, LOCAL_IDENTITY, runLimits, setupOptions } from '../../src/run/compose-goal-run.js';
import { rawSpec } from '../helpers/spec-builders.js';

const logger = pino({ level: 'silent' });
const spec = (limits?: Record<string, unknown>): GoalSpec => parseGoalSpec(JSON.stringify(rawSpec(undefined, { goal_id: 'g1', ...(limits ? { limits } : {}) })), { source: 'spec' });

describe('runLimits', () => {
  const config = parseRepoConfig({ max_iterations: 20, cost_cap_usd: 5 });
  const cases = [
    {
      name: 'config only',
      spec: spec(),
      human: undefined,
      pin: false,
      limits: { ...DEFAULT_LIMITS, max_iterations: 20, cost_cap_usd: 5 },
    },
    {
      name: 'the spec only tightens',
      spec: spec({ max_iterations: 10, cost_cap_usd: 50 }),
      human: undefined,
      pin: false,
      limits: { ...DEFAULT_LIMITS, max_iterations: 10, cost_cap_usd: 5 },
    },
    {
      name: 'a human raises the budget',
      spec: spec({ cost_cap_usd: 2 }),
      human: { cost_cap_usd: 30 },
      pin: false,
      limits: { ...DEFAULT_LIMITS, max_iterations: 20, cost_cap_usd: 30 },
    },
    {
      name: 'pinned: the limits in force are written into the spec',
      spec: spec({ max_iterations: 10 }),
      human: { cost_cap_usd: 1 },
      pin: true,
      limits: { ...DEFAULT_LIMITS, max_iterations: 10, cost_cap_usd: 1 },
    },
  ];
  it.each(cases)('$name', (c) => {
    const out = runLimits(config, c.spec, c.human, { pin: c.pin });
    expect(out.limits).toEqual(c.limits);
    expect(out.spec.limits).toEqual(c.pin ? c.limits : c.spec.limits);
  });

  it('warns, once, about the spec limits it ignored (looser than the config, and no human set them)', () => {
    const warnings: Array<{ ignored: string[]; msg: string }> = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    runLimits(config, spec({ max_iterations: 30, cost_cap_usd: 50, max_retries: 2 }), { cost_cap_usd: 40 }, { logger: log });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.ignored).toEqual(['max_iterations: 30']);
    expect(warnings[0]!.msg).toBe("the goal spec's limits may only tighten the repo config; ignored: max_iterations: 30");
    runLimits(config, spec({ max_iterations: 10 }), undefined, { logger: log });
    expect(warnings).toHaveLength(1);
  });
});

describe('configCommands', () => {
  it.each([
    { raw: {}, out: { gate: [], setup: [], setupNetwork: false, setupEnv: {} } },
    { raw: { gate: ['npm test'], setup: ['npm ci'], network: 'setup' }, out: { gate: ['npm test'], setup: ['npm ci'], setupNetwork: true, setupEnv: {} } },
    { raw: { setup: ['npm ci'], network: 'none' }, out: { gate: [], setup: ['npm ci'], setupNetwork: false, setupEnv: {} } },
    // Only the named variables, from the host given: never the whole environment.
    { raw: { setup: ['npm ci'], setup_env: ['HTTPS_PROXY'] }, out: { gate: [], setup: ['npm ci'], setupNetwork: false, setupEnv: { HTTPS_PROXY: 'http://p:3128' } } },
  ])('$raw', ({ raw, out }) => {
    expect(configCommands(parseRepoConfig(raw), { HTTPS_PROXY: 'http://p:3128', HOME: '/root' })).toEqual(out);
  });
});

describe('setupOptions', () => {
  const host = { HTTPS_PROXY: 'http://p:3128', NODE_EXTRA_CA_CERTS: '/etc/corp.pem', HOME: '/root' };
  it.each([
    // The timeout is left to the task timeout; the stall bound is 45 s.
    { raw: {}, out: { stallS: 45, unpassedHostNames: ['HTTPS_PROXY', 'NODE_EXTRA_CA_CERTS'] } },
    { raw: { setup_timeout_s: 900, setup_stall_s: 20, setup_env: ['HTTPS_PROXY'] }, out: { timeoutS: 900, stallS: 20, unpassedHostNames: ['NODE_EXTRA_CA_CERTS'] } },
  ])('$raw', ({ raw, out }) => {
    expect(setupOptions(parseRepoConfig(raw), host)).toEqual(out);
  });

  it('refuses a stall bound or timeout that is not a positive whole number of seconds', () => {
    expect(() => parseRepoConfig({ setup_stall_s: 0 })).toThrow(/setup_stall_s/);
    expect(() => parseRepoConfig({ setup_timeout_s: 1.5 })).toThrow(/setup_timeout_s/);
  });
});

describe('agentDeps', () => {
  const sandbox = {} as Sandbox;
  it.each([
    { raw: {}, model: undefined },
    { raw: { model: 'claude-x', mcp_servers: [{ name: 'db', command: 'db-mcp' }] }, model: 'claude-x' },
  ])('$raw', ({ raw, model }) => {
    const config = parseRepoConfig(raw);
    const limits = { ...DEFAULT_LIMITS, task_timeout_s: 42, max_wall_minutes: 7, max_turns: 33 };
    expect(agentDeps({ sandbox, config, limits, logger })).toEqual({
      sandbox,
      logger,
      ...(model ? { model } : {}),
      protectedPaths: config.protected_paths,
      taskTimeoutS: 42,
      maxTurns: 33,
      mcpServers: config.mcp_servers,
      maxWallMinutes: 7,
    });
  });
});

describe('goalWorkspace', () => {
  it('defaults the branch and the identity', () => {
    const w = goalWorkspace({ remote: '/r', dir: '/tmp/w' }, 'g1', parseRepoConfig({}));
    expect(w.branch).toBe('goal/g1');
    expect(w.dir).toBe('/tmp/w');
    expect(LOCAL_IDENTITY.name).toBe('goal-loop');
  });
});

describe('composeGoalRun', () => {
  const ledger = {} as Ledger;
  const forge = {} as Forge;
  const sandbox = { describe: () => 'fake' } as unknown as Sandbox;
  const workspace = { dir: '/w', branch: 'goal/g1', prepare: async () => [] } as unknown as Workspace;
  const config = parseRepoConfig({ cost_cap_usd: 5, gate: ['true'] });

  it('derives the run from the config and spec, and gives the factory the limits in force', async () => {
    let seen: number | undefined;
    let closed = 0;
    const agent = {
      close: async () => {
        closed += 1;
      },
    } as unknown as TaskAgent;
    const run = await composeGoalRun({
      repo: '/r',
      spec: spec({ task_timeout_s: 60 }),
      config,
      ledger,
      forge,
      logger,
      workspace,
      sandbox: async () => sandbox,
      agent: (ctx) => {
        seen = ctx.limits.task_timeout_s;
        return agent;
      },
      humanLimits: { cost_cap_usd: 9 },
      approve: ['a'],
    });
    expect(seen).toBe(60);
    expect(run.options).toMatchObject({
      repo: '/r',
      ledger,
      forge,
      workspace,
      sandbox,
      agent,
      gate: ['true'],
      setup: [],
      setupNetwork: false,
      limits: { ...DEFAULT_LIMITS, task_timeout_s: 60, cost_cap_usd: 9 },
      approve: ['a'],
    });
    expect(run.limits.cost_cap_usd).toBe(9);
    await run.close();
    expect(closed).toBe(1);
  });

  it('leaves an agent it did not make open, and builds the clone from its description', async () => {
    let closed = 0;
    const agent = {
      close: async () => {
        closed += 1;
      },
    } as unknown as TaskAgent;
    const run = await composeGoalRun({ repo: '/r', spec: spec(), config, ledger, forge, logger, workspace: { remote: '/r', dir: '/tmp/w2', baseBranch: 'main' }, sandbox, agent });
    expect(run.options.workspace.branch).toBe('goal/g1');
    expect(run.options.limits).toEqual({ ...DEFAULT_LIMITS, cost_cap_usd: 5 });
    expect(run.options).not.toHaveProperty('humanLimits');
    await run.close();
    expect(closed).toBe(0);
  });

  it('passes a sandbox refusal through', async () => {
    const refused = composeGoalRun({ repo: '/r', spec: spec(), config, ledger, forge, logger, workspace, sandbox: () => Promise.reject(new Error('no bwrap')) });
    await expect(refused).rejects.toThrow('no bwrap');
  });
});
