import { parseDocument } from 'yaml';
import { z } from 'zod';
import { didYouMean } from '../common/closest-word.js';
import { objectKeysAt } from '../common/schema-keys.js';
import { BaselinePolicySchema, DEFAULT_TEST_PATHS } from '../goal/evidence.js';
import { LIMIT_KEYS, type LoopLimits, limitConfigKeys } from '../goal/limits.js';
import { DEFAULT_SETUP_STALL_S } from '../goal/setup-hint.js';
import { DEFAULT_PROTECTED_PATHS } from './protected-paths.js';

export const REPO_CONFIG_PATH = '.github/goal-loop.yml';

const command = z.string().trim().min(1);

export const McpServerSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9_-]+$/i, 'must match [A-Za-z0-9_-]+')
      .describe("Namespace of the server's tools: the agent sees them as `mcp__<name>__<tool>`."),
    command: command.describe("Program that starts the stdio MCP server, run inside the goal's sandbox with the workspace as its directory."),
    args: z.array(z.string()).default([]).describe('Arguments for the command.'),
    env: z
      .array(z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name'))
      .default([])
      .describe("Names of host variables to pass to the server; nothing else from the host is passed, and never the bot's own credentials."),
  })
  .describe('A stdio MCP server whose tools the Claude agent may use.');

export type McpServerConfig = z.output<typeof McpServerSchema>;

/** `.github/goal-loop.yml`: every key optional, every key documented. */
/** What setups usually read: the lockfiles and manifests of npm, pnpm, yarn, bun, pip, poetry, uv, cargo, go, bundler, composer. */
export const DEFAULT_SETUP_INPUTS = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'bun.lockb',
  'requirements.txt',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'Cargo.toml',
  'Cargo.lock',
  'go.sum',
  'Gemfile.lock',
  'composer.lock',
];

export const RepoConfigSchema = z
  .strictObject({
    label: z.string().trim().min(1).default('goal').describe('Issue label that starts a goal.'),
    require_plan_approval: z.boolean().default(false).describe('Wait for `/goal approve` before running any plan (plans the model wrote always wait).'),
    setup: z.array(command).default([]).describe('Commands run once in the workspace before the first task, e.g. `npm ci`. Network only if `network: setup`.'),
    setup_timeout_s: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Seconds each setup command may run before it is killed (default: `task_timeout_s`). A setup that times out fails the run with a hint at the likely cause.'),
    setup_stall_s: z
      .number()
      .int()
      .positive()
      .default(DEFAULT_SETUP_STALL_S)
      .describe(
        'Seconds a setup command may go with no output, no file written in the workspace, no CPU used and no data moved (a package manager retrying a registry it cannot reach, behind a proxy, prints nothing) before it is killed as stalled; the failure names the likely cause. The default leaves a setup stuck behind a proxy failing in under a minute.',
      ),
    setup_env: z
      .array(z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name'))
      .default([])
      .describe(
        "Names of host variables the setup commands get (and nothing else does), e.g. `HTTPS_PROXY`, `NPM_CONFIG_REGISTRY`, `NODE_EXTRA_CA_CERTS`; never the bot's own credentials. A CA bundle a listed variable names (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `PIP_CERT`, `CURL_CA_BUNDLE`, `GIT_SSL_CAINFO`) is bound read-only for setup. Never passed, whatever is listed (each refusal is a warning with its reason): the bot's own names (`APP_ID`, `PRIVATE_KEY*`, `DATABASE_URL`, `GITHUB_*`, `GH_*`, `WEBHOOK_*`, `PG*`, `ANTHROPIC_*`, `GOAL_*`), `PATH`, `HOME`, `TMPDIR`, and any name containing `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `KEY`, `CREDENTIAL`, `AUTH`, `PRIVATE` or `COOKIE` (so `NPM_TOKEN` is refused too: a private registry's token cannot reach setup this way). The same rule holds for an MCP server's `env`.",
      ),
    setup_inputs: z
      .array(
        z
          .string()
          .min(1)
          .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'must be a path inside the repository'),
      )
      .default(DEFAULT_SETUP_INPUTS)
      .describe('Files the setup reads (lockfiles, manifests): the setup cache reuses what setup produced while these files and the setup commands are unchanged.'),
    gate: z.array(command).default([]).describe('Commands the final gate runs after the acceptance checks; all must exit 0.'),
    ...limitConfigKeys(),
    on_escalation: z
      .enum(['continue', 'stop'])
      .default('continue')
      .describe('When a task runs out of attempts: `continue` works every task that does not depend on it, then the goal rests in ESCALATED; `stop` rests in ESCALATED at once.'),
    protected_paths: z
      .array(z.string().min(1))
      .default(DEFAULT_PROTECTED_PATHS)
      .describe('Globs no checkpoint may touch; a change to them fails the attempt. `.github/goal-loop.yml` is protected whatever the list says.'),
    verification_baseline: BaselinePolicySchema.default('warn'),
    follow_base: z
      .enum(['rebase', 'merge', 'off'])
      .default('rebase')
      .describe(
        "When the base branch moves under a goal that has checkpoints: `rebase` replays them onto its tip one by one (trailers kept), `merge` adds one merge commit; each replayed task's verification runs again, and a task whose change conflicts or whose verification now fails is repaired. `off` leaves the branch where it is. The CLI follows only with `goal-loop run --follow-base`.",
      ),
    max_ci_fixes: z
      .number()
      .int()
      .min(0)
      .max(20)
      .default(2)
      .describe(
        "Fix tasks a goal may start from the repository's own failing checks (another app's check run, or a commit status, on the head goal-loop pushed; only the required ones when branch protection names some). One more failure escalates to a human. 0: a failing check escalates at once. The PR is marked ready only when those checks pass, or when none appear within `checks_grace_s`.",
      ),
    checks_grace_s: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(600)
      .describe(
        "How long a finished goal's draft PR waits for the repository's checks to appear on its head before it is marked ready without them. A repository with no checks on its base branch's tip has no CI: its goal PRs are marked ready at once.",
      ),
    test_paths: z
      .array(z.string().trim().min(1))
      .default(DEFAULT_TEST_PATHS)
      .describe("Globs of test files: a task may add files there, but not change or delete those at the goal's base (unless it says `may_edit_tests: true`); a checkpoint that does is refused."),
    verify_with_base_tests: z.boolean().default(false).describe("Verify every task with the base's versions of the test files (`test_paths`, `verification_paths`) restored over its tree."),
    sandbox: z.enum(['bwrap', 'process']).default('bwrap').describe('`bwrap`: the bubblewrap jail (required by default). `process`: an unisolated fallback, warned about on every run.'),
    network: z.enum(['none', 'setup']).default('none').describe('`setup` gives the network to the setup commands only; never to tasks.'),
    model: z.string().trim().min(1).optional().describe('Claude model id for the agent and planner (default: GOAL_LOOP_MODEL or a current Sonnet).'),
    mcp_servers: z
      .array(McpServerSchema)
      .default([])
      .refine((servers) => new Set(servers.map((s) => s.name)).size === servers.length, 'server names must be unique')
      .describe("Stdio MCP servers started in the sandbox for the goal's lifetime; the Claude agent gets their tools as `mcp__<name>__<tool>` (a task's `mcp_tools` narrows them)."),
  })
  .describe('goal-loop repository configuration (.github/goal-loop.yml).');

export type RepoConfig = z.output<typeof RepoConfigSchema>;

export class RepoConfigError extends Error {
  override name = 'RepoConfigError';
  /** `source`: the file as the user knows it (a `--config` path), for the message. */
  constructor(
    readonly problems: string[],
    source: string = REPO_CONFIG_PATH,
  ) {
    super(problems.length === 1 ? `invalid ${source}: ${problems[0]}` : `invalid ${source}:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

/** Validates a parsed config object; `undefined` (no file) gives the defaults. */
export function parseRepoConfig(raw: unknown, source?: string): RepoConfig {
  const result = RepoConfigSchema.safeParse(raw ?? {});
  if (result.success) {
    // The config file itself stays protected whatever list the owner gives: a checkpoint that
    // rewrote it would reach the base branch with the goal's pull request.
    const paths = result.data.protected_paths;
    if (!paths.includes(REPO_CONFIG_PATH)) result.data.protected_paths = [...paths, REPO_CONFIG_PATH];
    return result.data;
  }
  throw new RepoConfigError(
    result.error.issues.map((i) => {
      const key = i.path.map(String).join('.') || '(root)';
      if (i.code === 'unrecognized_keys') {
        const known = objectKeysAt(RepoConfigSchema, i.path);
        return `${key}: unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `${k}${didYouMean(k, known)}`).join(', ')}`;
      }
      return `${key}: ${i.message}`;
    }),
    source,
  );
}

/** Parses the YAML text of `.github/goal-loop.yml` (or of the file `source`). */
export function parseRepoConfigText(text: string, source?: string): RepoConfig {
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    throw new RepoConfigError(
      doc.errors.map((e) => e.message.split('\n')[0] ?? e.message),
      source,
    );
  let raw: unknown;
  try {
    raw = doc.toJS(); // throws on an alias bomb (more than maxAliasCount expansions)
  } catch (err) {
    throw new RepoConfigError([`cannot read the YAML: ${(err as Error).message}`], source);
  }
  return parseRepoConfig(raw, source);
}

/** The limits the config sets (absent keys left out, for the defaults or a later layer to fill). */
export function configLimits(config: RepoConfig): Partial<LoopLimits> {
  const out: Partial<LoopLimits> = {};
  for (const key of LIMIT_KEYS) {
    if (config[key] !== undefined) (out as Record<string, unknown>)[key] = config[key];
  }
  return out;
}

/** The JSON Schema editors use to complete `.github/goal-loop.yml`. */
export function repoConfigJsonSchema(): unknown {
  return z.toJSONSchema(RepoConfigSchema, { io: 'input' });
}
