import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { createSampleRepo, type SampleRepo } from '../../src/demo/sample-repo.js';
import { type FakeGitHub, type FakeGitHubOptions, fakeGitHub } from './fake-github.js';
import { git } from './git.js';
import { type GitHttpServer, startGitHttpServer } from './git-http-server.js';
import { type GitHubBridge, githubBridge } from './github-bridge.js';
import { tempDir } from './temp.js';
import type { RepoSpec } from './webhook-payloads.js';

export const OWNER = 'octo-org';
export const REPO = 'widgets';
/** A workflow token as GitHub hands one to a job (`ghs_` and 36 characters). */
export const WORKFLOW_TOKEN = 'ghs_wf0123456789abcdefABCDEF0123456789';

export interface ActionRun {
  /** The runner's environment for one run of `goal-loop action`. */
  env: Record<string, string>;
  summaryPath: string;
  outputPath: string;
  /** The step's outputs as the runner reads GITHUB_OUTPUT. */
  outputs(): Promise<Record<string, string>>;
  summary(): Promise<string>;
}

export interface ActionHarness {
  root: string;
  repo: SampleRepo;
  fake: FakeGitHub;
  gitServer: GitHttpServer;
  /** Set when the harness was made for a child process (`bridge: true`). */
  bridge?: GitHubBridge;
  repoSpec: RepoSpec;
  /** A run on a fresh runner: its own, empty RUNNER_TEMP; the event written to GITHUB_EVENT_PATH. */
  run(opts: { eventName: string; payload: object; runId: number; inputs?: Record<string, string> }): Promise<ActionRun>;
}

/**
 * One repository as a GitHub Action sees it: the GitHub fake (the API, authenticated with a
 * workflow token; `github-actions[bot]` writes), a git HTTP server over the repository's bare clone
 * that refuses anyone without the token, and a runner's environment per run.
 */
export async function actionHarness(opts: Partial<FakeGitHubOptions> & { bridge?: boolean; repoFiles?: Record<string, string>; from?: string } = {}): Promise<ActionHarness> {
  const root = await tempDir('goal-loop-action-');
  const repo = opts.from ? await bareCopy(opts.from, join(root, 'sample')) : await createSampleRepo(join(root, 'sample'), opts.repoFiles);
  await mkdir(join(root, 'git', OWNER), { recursive: true });
  await symlink(repo.bare, join(root, 'git', OWNER, `${REPO}.git`));
  const gitServer = await startGitHttpServer(join(root, 'git'), 'x-access-token', WORKFLOW_TOKEN);
  const { bridge: useBridge, repoFiles: _files, from: _from, ...fakeOpts } = opts;
  const fake = fakeGitHub({
    owner: OWNER,
    repo: REPO,
    installationId: 1,
    appSlug: 'github-actions',
    appId: 15368,
    workflowToken: WORKFLOW_TOKEN,
    strictAuth: true,
    collaborators: { alice: 'write', rob: 'read' },
    resolveSha: (ref) => {
      try {
        return git(repo.bare, 'rev-parse', '--verify', '--quiet', `refs/heads/${ref}`);
      } catch {
        return undefined;
      }
    },
    ...fakeOpts,
  });
  const bridge = useBridge ? await githubBridge() : undefined;
  onTestFinished(async () => {
    await bridge?.close();
    await gitServer.close();
    fake.stop();
    if (fake.violations.length > 0 || fake.unhandled.length > 0) {
      throw new Error(`GitHub API misuse:\n${[...fake.violations, ...fake.unhandled.map((u) => `unhandled ${u}`)].join('\n')}`);
    }
  });
  const apiUrl = bridge ? `http://${bridge.env.GHE_HOST}/api/v3` : 'https://api.github.com';
  return {
    root,
    repo,
    fake,
    gitServer,
    ...(bridge ? { bridge } : {}),
    repoSpec: { owner: OWNER, repo: REPO, installationId: 1, cloneUrl: `https://github.com/${OWNER}/${REPO}.git`, sender: 'alice' },
    async run({ eventName, payload, runId, inputs = {} }) {
      const dir = join(root, `runner-${runId}-${Math.random().toString(36).slice(2, 8)}`);
      await mkdir(join(dir, 'temp'), { recursive: true });
      const eventPath = join(dir, 'event.json');
      await writeFile(eventPath, JSON.stringify(payload));
      const summaryPath = join(dir, 'summary.md');
      const outputPath = join(dir, 'output');
      const env: Record<string, string> = {
        GITHUB_EVENT_NAME: eventName,
        GITHUB_EVENT_PATH: eventPath,
        GITHUB_REPOSITORY: `${OWNER}/${REPO}`,
        GITHUB_API_URL: apiUrl,
        GITHUB_SERVER_URL: gitServer.base,
        GITHUB_WORKSPACE: join(dir, 'workspace'),
        RUNNER_TEMP: join(dir, 'temp'),
        GITHUB_STEP_SUMMARY: summaryPath,
        GITHUB_OUTPUT: outputPath,
        GITHUB_RUN_ID: String(runId),
        GITHUB_RUN_ATTEMPT: '1',
        GITHUB_WORKFLOW_REF: `${OWNER}/${REPO}/.github/workflows/goal-loop.yml@refs/heads/main`,
        GITHUB_REF_NAME: 'main',
        INPUT_GITHUB_TOKEN: WORKFLOW_TOKEN,
        INPUT_TRIGGER_LABEL: 'goal',
        INPUT_CONFIG: '.github/goal-loop.yml',
        INPUT_MAX_RUN_MINUTES: '300',
        INPUT_SANDBOX: 'bwrap',
        GOAL_LOOP_GITHUB_WRITE_INTERVAL_MS: '0',
        ...Object.fromEntries(Object.entries(inputs).map(([k, v]) => [`INPUT_${k.toUpperCase()}`, v])),
      };
      return {
        env,
        summaryPath,
        outputPath,
        outputs: async () => parseOutputs(await readFile(outputPath, 'utf8').catch(() => '')),
        summary: () => readFile(summaryPath, 'utf8').catch(() => ''),
      };
    },
  };
}

/** A bare copy of a repository (a real project's, for a trial), its default branch as `main`. */
async function bareCopy(from: string, root: string): Promise<SampleRepo> {
  await mkdir(root, { recursive: true });
  const bare = join(root, 'origin.git');
  git(root, 'clone', '--quiet', '--bare', from, bare);
  const head = git(bare, 'symbolic-ref', '--short', 'HEAD');
  if (head !== 'main') {
    git(bare, 'branch', '-m', head, 'main');
    git(bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
  }
  return { bare, work: from };
}

/** GITHUB_OUTPUT as the runner reads it: `name=value` lines and `name<<DELIM` blocks. */
export function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const block = /^([^=<]+)<<(.+)$/.exec(line);
    if (block) {
      const value: string[] = [];
      while (++i < lines.length && lines[i] !== block[2]) value.push(lines[i]!);
      out[block[1]!] = value.join('\n');
    } else if (line.includes('=')) {
      out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
    }
  }
  return out;
}
