import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ACTION_EVENTS, type ActionEventName } from '../../src/action/events.js';

/** examples/goal-loop-action.yml, the workflow a team copies as it is, against what `goal-loop action` handles and declares. */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A GitHub Actions expression, as the YAML writes it: `${{ body }}`. */
const expression = (body: string): string => `\${{ ${body} }}`;
const EXAMPLE = readFileSync(join(ROOT, 'examples/goal-loop-action.yml'), 'utf8');

interface Step {
  name?: string;
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}

interface Job {
  if?: string;
  concurrency?: { group?: string; 'cancel-in-progress'?: boolean };
  permissions?: Record<string, string>;
  'runs-on'?: string;
  'timeout-minutes'?: number;
  steps: Step[];
}

interface Workflow {
  on: Record<string, { types?: string[]; inputs?: Record<string, { required?: boolean; description?: string }> } | null>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const actionYml = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as { inputs: Record<string, { default?: string }> };
const actionInputs = Object.keys(actionYml.inputs);

/** The workflow's one job and its goal-loop step. */
function goalLoopJob(wf: Workflow): { job: Job; step: Step; at: number } {
  const jobs = Object.values(wf.jobs);
  expect(jobs).toHaveLength(1);
  const job = jobs[0]!;
  const at = job.steps.findIndex((s) => /^goal-loop\/goal-loop@v\d+$/.test(s.uses ?? ''));
  expect(at, 'a step that uses goal-loop/goal-loop@v<major>').toBeGreaterThanOrEqual(0);
  return { job, step: job.steps[at]!, at };
}

/** The example with its commented alternative (YAML lines commented out) put back in. */
function uncommented(text: string): string {
  return text.replace(/^(\s*)# (\s*(?:- )?[a-z][a-z_-]*:(?:\s.*)?)$/gm, '$1$2');
}

const workflow = parse(EXAMPLE) as Workflow;

describe('examples/goal-loop-action.yml', () => {
  it('listens only to events goal-loop action handles, with only the activity types it acts on', () => {
    for (const [event, spec] of Object.entries(workflow.on)) {
      expect(Object.keys(ACTION_EVENTS), event).toContain(event);
      const handled = ACTION_EVENTS[event as ActionEventName];
      for (const type of spec?.types ?? []) expect(handled.types, `${event}: ${type}`).toContain(type);
      // An event with activity types lists them: left out, every type would start a run.
      if (handled.types.length > 0) expect(spec?.types?.length ?? 0, event).toBeGreaterThan(0);
      for (const input of Object.keys(spec?.inputs ?? {})) expect(handled.inputs, `${event} input ${input}`).toContain(input);
    }
  });

  it('listens to every event the loop needs: the label, /goal commands, reviews, and its own continuation', () => {
    expect(workflow.on.issues?.types).toContain('labeled');
    expect(workflow.on.issue_comment?.types).toContain('created');
    expect(workflow.on.pull_request_review?.types).toContain('submitted');
    const issue = workflow.on.workflow_dispatch?.inputs?.issue;
    expect(issue?.required).toBe(true);
    expect(issue?.description?.length ?? 0).toBeGreaterThan(5);
  });

  it('asks for exactly the permissions goal-loop uses, all write', () => {
    expect(workflow.jobs[Object.keys(workflow.jobs)[0]!]!.permissions).toBeUndefined();
    expect(workflow.permissions).toEqual({ contents: 'write', issues: 'write', 'pull-requests': 'write', checks: 'write', actions: 'write' });
  });

  it('keeps two runs of one goal apart, never cancelling one in progress', () => {
    const { job } = goalLoopJob(workflow);
    expect(job.concurrency?.['cancel-in-progress']).toBe(false);
    const group = job.concurrency?.group ?? '';
    expect(group).toContain('github.event.issue.number || inputs.issue');
    expect(group).toContain('github.event.pull_request.head.ref');
  });

  it('skips cheaply, in the job, what cannot steer a goal', () => {
    const condition = goalLoopJob(workflow).job.if ?? '';
    expect(condition).toContain("github.event.label.name == 'goal'");
    expect(condition).toContain("contains(github.event.comment.body, '/goal')");
    expect(condition).toContain("startsWith(github.event.pull_request.head.ref, 'goal/')");
    expect(condition).toContain("github.event.review.state == 'changes_requested'");
    expect(condition).toContain("github.event_name == 'workflow_dispatch'");
  });

  it('allows bubblewrap its namespaces (Ubuntu 24.04) before the goal-loop step, and does not check out', () => {
    const { job, at } = goalLoopJob(workflow);
    expect(job['runs-on']).toBe('ubuntu-24.04');
    const sysctl = job.steps.findIndex((s) => (s.run ?? '').includes('sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0'));
    expect(sysctl).toBeGreaterThanOrEqual(0);
    expect(sysctl).toBeLessThan(at);
    expect(job.steps.some((s) => s.uses?.startsWith('actions/checkout@'))).toBe(false);
  });

  it("gives the job more time than one run's budget, so a run ends itself at a clean point and continues", () => {
    const { job } = goalLoopJob(workflow);
    expect(job['timeout-minutes']).toBeGreaterThan(Number(actionYml.inputs.max_run_minutes?.default));
    // GitHub-hosted runners end any job at 6 hours.
    expect(job['timeout-minutes']).toBeLessThanOrEqual(360);
  });

  it('passes only inputs action.yml declares, the API key from a secret', () => {
    const { step } = goalLoopJob(workflow);
    for (const key of Object.keys(step.with ?? {})) expect(actionInputs, key).toContain(key);
    expect(step.with?.anthropic_api_key).toBe(expression('secrets.ANTHROPIC_API_KEY'));
  });

  it('has a commented App-token alternative that, uncommented, is a valid workflow within the token lifetime', () => {
    const alternative = parse(uncommented(EXAMPLE)) as Workflow;
    const { job, step, at } = goalLoopJob(alternative);
    const token = job.steps.findIndex((s) => s.uses?.startsWith('actions/create-github-app-token@'));
    expect(token).toBeGreaterThanOrEqual(0);
    expect(token).toBeLessThan(at);
    const id = job.steps[token]!.id;
    for (const key of Object.keys(step.with ?? {})) expect(actionInputs, key).toContain(key);
    expect(step.with?.github_token).toBe(expression(`steps.${id}.outputs.token`));
    expect(step.with?.bot_login).toBe(`${expression(`steps.${id}.outputs.app-slug`)}[bot]`);
    // An installation token expires after an hour: the run must end, and continue itself, before.
    expect(Number(step.with?.max_run_minutes)).toBeLessThan(60);
    // Uncommenting touched only the alternative: the rest parses as before.
    expect(alternative.on).toEqual(workflow.on);
    expect(alternative.permissions).toEqual(workflow.permissions);
  });
});
