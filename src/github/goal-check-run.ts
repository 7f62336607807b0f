import type { ProbotOctokit } from 'probot';
import type { GoalSnapshot, LoopResult } from '../goal/result.js';
import type { GoalKey, GoalLedger } from '../ports/goal-ledger.js';
import { type GitHubGoal, readGitHubMeta } from '../steering/goal-meta.js';
import { newAnnotations } from '../steering/report/annotations.js';
import { checkAnnotations, renderCheckRun } from '../steering/report/check-run.js';
import type { AttemptView } from '../steering/report/record.js';
import { createOnce } from './create-once.js';
import type { WriterIdentity } from './own-comments.js';
import { createOptions, writeOptions } from './write-options.js';

type Octokit = InstanceType<typeof ProbotOctokit>;

export const CHECK_NAME = 'goal-loop';

export interface CheckRunContext {
  o: Octokit;
  g: GitHubGoal;
  key: GoalKey;
  ledger: GoalLedger;
  self: () => Promise<WriterIdentity>;
  workspaceDir: string | undefined;
}

/**
 * The goal's one `goal-loop` check run on the head a run rested at, concluded: a check run is never
 * left in progress. It is looked for before it is created (an earlier try or run may have made it),
 * and sent again only when it would change. One whose head moved on since (an older release opened
 * one at every checkpoint) is concluded as superseded.
 */
export async function reportCheckRun(c: CheckRunContext, s: GoalSnapshot, headSha: string, r: LoopResult, record: readonly AttemptView[]): Promise<void> {
  const { owner, repo } = c.g;
  const rendered = renderCheckRun(s, record, { repoUrl: c.g.htmlUrl, goalId: c.key.goalId });
  const found = checkAnnotations(s, record, c.workspaceDir);
  const conclusion = r.success ? 'success' : r.status === 'ESCALATED' ? 'failure' : 'neutral';
  const meta = readGitHubMeta((await c.ledger.getGoal(c.key))?.meta ?? {});
  let id = meta.checkRunId !== undefined && meta.checkRunSha === headSha ? meta.checkRunId : undefined;
  if (id === undefined && meta.checkRunId !== undefined) await supersede(c, meta.checkRunId, headSha);
  if (id === undefined) {
    const annotations = newAnnotations(found, []);
    const output = { ...rendered, ...(annotations.length > 0 ? { annotations } : {}) };
    id = await oncePerHead(`${owner}/${repo}@${headSha}`, async () => {
      const existing = await findCheckRun(c, headSha);
      if (existing !== undefined) return existing;
      return createOnce({
        find: () => findCheckRun(c, headSha),
        create: async () => (await c.o.rest.checks.create({ owner, repo, name: CHECK_NAME, head_sha: headSha, status: 'completed', conclusion, output, ...createOptions('normal') })).data.id,
      });
    });
  }
  // Annotations add up on a check run: only those it lacks are sent, so a repeated report adds none.
  const existing = found.length > 0 ? await c.o.paginate(c.o.rest.checks.listAnnotations, { owner, repo, check_run_id: id, per_page: 100 }) : [];
  const annotations = newAnnotations(found, existing);
  const { data: shown } = await c.o.rest.checks.get({ owner, repo, check_run_id: id });
  const same =
    annotations.length === 0 &&
    shown.status === 'completed' &&
    shown.conclusion === conclusion &&
    shown.output.title === rendered.title &&
    shown.output.summary === rendered.summary &&
    shown.output.text === rendered.text;
  if (meta.checkRunId !== id) await c.ledger.setMeta(c.key, { checkRunId: id, checkRunSha: headSha });
  if (same) return;
  await c.o.rest.checks.update({
    owner,
    repo,
    check_run_id: id,
    status: 'completed',
    conclusion,
    output: { ...rendered, ...(annotations.length > 0 ? { annotations } : {}) },
    ...writeOptions('normal'),
  });
}

/**
 * The find-or-create of a head's run in flight in this process: two performers of one effect here
 * (the run's and a sweep's, after a claim ran out under a slow GitHub) share it, never create two.
 */
const inFlight = new Map<string, Promise<number>>();
function oncePerHead(key: string, findOrCreate: () => Promise<number>): Promise<number> {
  const running = inFlight.get(key);
  if (running !== undefined) return running;
  const made = findOrCreate().finally(() => inFlight.delete(key));
  inFlight.set(key, made);
  return made;
}

/** This app's `goal-loop` check run on a commit, if there is one (another App may name one so too). */
export async function findCheckRun(c: CheckRunContext, headSha: string): Promise<number | undefined> {
  const self = await c.self();
  if ('user' in self) return undefined; // a user's token makes no check runs
  const byId = self.id > 0;
  const { data } = await c.o.rest.checks.listForRef({ owner: c.g.owner, repo: c.g.repo, ref: headSha, check_name: CHECK_NAME, ...(byId ? { app_id: self.id } : {}), per_page: 100 });
  return data.check_runs.find((run) => (byId ? run.app?.id === self.id : run.app?.slug === self.slug))?.id;
}

/** Concludes the goal's run on an older head if it is still open: the head's own run says how it went. */
async function supersede(c: CheckRunContext, id: number, headSha: string): Promise<void> {
  const { owner, repo } = c.g;
  const { data } = await c.o.rest.checks.get({ owner, repo, check_run_id: id }).catch((err: { status?: number }) => {
    if (err.status === 404) return { data: undefined };
    throw err;
  });
  if (!data || data.status === 'completed') return;
  await c.o.rest.checks.update({
    owner,
    repo,
    check_run_id: id,
    status: 'completed',
    conclusion: 'neutral',
    output: { title: 'Superseded', summary: `The goal moved on to ${headSha.slice(0, 7)}: the \`${CHECK_NAME}\` check run there reports it.` },
    ...writeOptions('normal'),
  });
}
