import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { UsageError } from '../common/errors.js';

/**
 * What a GitHub Action's run is given: the runner's standard environment and the action's inputs
 * (`INPUT_<NAME>`, as the runner passes them), read once and checked, so a missing or malformed
 * one fails with one clear line before anything is done.
 */

/** The inputs of action.yml, as `goal-loop action` reads them (DESIGN.md §9). */
export const ActionInputsSchema = z.object({
  githubToken: z.string().min(1).describe('`github_token`: the token for the API and git (default in action.yml: the workflow token).'),
  anthropicApiKey: z.string().optional().describe('`anthropic_api_key`: without it (and without Bedrock or Vertex), goals use their `run` steps only.'),
  triggerLabel: z.string().min(1).default('goal').describe('`trigger_label`: the label that starts a goal.'),
  configPath: z.string().min(1).default('.github/goal-loop.yml').describe("`config`: the owner's config, read from the default branch."),
  maxRunMinutes: z.coerce.number().int().min(1).max(360).default(300).describe('`max_run_minutes`: the time budget of one run; then the goal continues in a new run.'),
  botLogin: z.string().optional().describe("`bot_login`: whose comments carry the goal's state (default: the token's own identity)."),
  workflow: z.string().optional().describe("`workflow`: the workflow file a continuation is dispatched to (default: this run's)."),
  sandbox: z.enum(['bwrap', 'process']).default('bwrap').describe('`sandbox`: `process` runs commands unjailed on the runner, only when chosen.'),
  model: z.string().optional().describe("`model`: the Claude model (default: the config's, else goal-loop's)."),
  anthropicBaseUrl: z.string().url().optional().describe('`anthropic_base_url`: another Messages API endpoint.'),
  provider: z.enum(['anthropic', 'bedrock', 'vertex']).default('anthropic').describe('`provider`: where Claude is reached.'),
  awsRegion: z.string().optional().describe('`aws_region`: for `provider: bedrock`.'),
  vertexProjectId: z.string().optional().describe('`vertex_project_id`: for `provider: vertex`.'),
  vertexRegion: z.string().optional().describe('`vertex_region`: for `provider: vertex`.'),
});
export type ActionInputs = z.infer<typeof ActionInputsSchema>;

const INPUT_NAMES: Record<keyof ActionInputs, string> = {
  githubToken: 'github_token',
  anthropicApiKey: 'anthropic_api_key',
  triggerLabel: 'trigger_label',
  configPath: 'config',
  maxRunMinutes: 'max_run_minutes',
  botLogin: 'bot_login',
  workflow: 'workflow',
  sandbox: 'sandbox',
  model: 'model',
  anthropicBaseUrl: 'anthropic_base_url',
  provider: 'provider',
  awsRegion: 'aws_region',
  vertexProjectId: 'vertex_project_id',
  vertexRegion: 'vertex_region',
};

export interface ActionContext {
  eventName: string;
  payload: Record<string, unknown>;
  owner: string;
  repo: string;
  /** `$GITHUB_API_URL` (GitHub Enterprise: its own). */
  apiUrl: string;
  /** `$GITHUB_SERVER_URL`. */
  serverUrl: string;
  /** `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git`: where goal branches are pushed. */
  cloneUrl: string;
  htmlUrl: string;
  /** Where this run keeps its ledger and clones: `$RUNNER_TEMP/goal-loop`; gone with the runner. */
  tempDir: string;
  summaryPath?: string;
  outputPath?: string;
  /** This run: its id and attempt (a re-run is a new attempt of the same id). */
  runId: string;
  runAttempt: string;
  /** The workflow file of this run (from `GITHUB_WORKFLOW_REF`), for its continuation. */
  workflowFile?: string;
  /** The ref the workflow ran on (a dispatch names it again). */
  ref?: string;
  inputs: ActionInputs;
}

/** Where github.com's API and site are (a runner on GitHub Enterprise sets its own). */
export const DEFAULT_API_URL = 'https://api.github.com';
export const DEFAULT_SERVER_URL = 'https://github.com';

/** The runner's input variable for an input: `INPUT_` and its name upper-cased, spaces as `_`. */
export const inputVariable = (name: string) => `INPUT_${name.replace(/ /g, '_').toUpperCase()}`;

/** The context of this run, from the runner's environment; a UsageError names what is missing or wrong. */
export async function readActionContext(env: NodeJS.ProcessEnv): Promise<ActionContext> {
  const need = (name: string, value: string | undefined): string => {
    const v = value?.trim();
    if (!v) throw new UsageError(`goal-loop action: ${name} is not set; it runs as a step of a GitHub Actions workflow (see README, "Use it as a GitHub Action")`);
    return v;
  };
  const raw: Record<string, string> = {};
  for (const [key, name] of Object.entries(INPUT_NAMES)) {
    const v = env[inputVariable(name)]?.trim();
    if (v) raw[key] = v;
  }
  const parsed = ActionInputsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? '') as keyof ActionInputs;
    const name = INPUT_NAMES[key] ?? key;
    throw new UsageError(
      name === 'github_token' ? 'goal-loop action: the github_token input is empty (action.yml defaults it to the workflow token)' : `goal-loop action: input ${name}: ${issue.message}`,
    );
  }
  const [owner, repo, ...rest] = need('GITHUB_REPOSITORY', env.GITHUB_REPOSITORY).split('/');
  if (!owner || !repo || rest.length > 0) throw new UsageError(`goal-loop action: GITHUB_REPOSITORY must be owner/name, not ${JSON.stringify(env.GITHUB_REPOSITORY)}`);
  const eventPath = need('GITHUB_EVENT_PATH', env.GITHUB_EVENT_PATH);
  let payload: unknown;
  try {
    payload = JSON.parse(await readFile(eventPath, 'utf8'));
  } catch (err) {
    throw new UsageError(`goal-loop action: cannot read the event at GITHUB_EVENT_PATH (${(err as Error).message})`);
  }
  if (!payload || typeof payload !== 'object') throw new UsageError('goal-loop action: the event at GITHUB_EVENT_PATH is not a JSON object');
  const serverUrl = trimSlash(env.GITHUB_SERVER_URL?.trim() || DEFAULT_SERVER_URL);
  return {
    eventName: need('GITHUB_EVENT_NAME', env.GITHUB_EVENT_NAME),
    payload: payload as Record<string, unknown>,
    owner,
    repo,
    apiUrl: trimSlash(env.GITHUB_API_URL?.trim() || DEFAULT_API_URL),
    serverUrl,
    cloneUrl: `${serverUrl}/${owner}/${repo}.git`,
    htmlUrl: `${serverUrl}/${owner}/${repo}`,
    tempDir: `${need('RUNNER_TEMP', env.RUNNER_TEMP)}/goal-loop`,
    ...optional('summaryPath', env.GITHUB_STEP_SUMMARY),
    ...optional('outputPath', env.GITHUB_OUTPUT),
    runId: env.GITHUB_RUN_ID?.trim() || '0',
    runAttempt: env.GITHUB_RUN_ATTEMPT?.trim() || '1',
    ...optional('workflowFile', workflowFileOf(env.GITHUB_WORKFLOW_REF)),
    ...optional('ref', env.GITHUB_REF_NAME),
    inputs: parsed.data,
  };
}

/** `owner/repo/.github/workflows/goal.yml@refs/heads/main` -> `goal.yml`. */
export function workflowFileOf(ref: string | undefined): string | undefined {
  const m = /^[^/]+\/[^/]+\/\.github\/workflows\/([^@/]+)@/.exec(ref?.trim() ?? '');
  return m?.[1];
}

const trimSlash = (url: string) => url.replace(/\/+$/, '');

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  const v = value?.trim();
  return (v ? { [key]: v } : {}) as { [P in K]?: string };
}
