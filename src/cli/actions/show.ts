import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../common/errors.js';
import { plainText } from '../../common/plain-text.js';
import { redactUrls } from '../../common/redact-urls.js';
import { openStore } from '../../ledger/open-ledger.js';
import { Git } from '../../workspace/git.js';
import { TRAILER_ATTEMPT, TRAILER_TASK, TRAILER_VERIFIED } from '../../workspace/trailers.js';
import { findGoal, requireLedger } from '../find-goal.js';

export interface ShowValues {
  repo?: string;
  json?: boolean;
}

/** Commits listed; a goal has one per task, so more is a branch someone else added to. */
const MAX_COMMITS = 200;
/** Files listed in the diffstat (the totals count them all). */
const MAX_FILES = 200;

export interface ShownCommit {
  sha: string;
  subject: string;
  task: string;
  attempt: string;
  verified: string;
}

export interface ShownFile {
  path: string;
  /** null for a binary file. */
  insertions: number | null;
  deletions: number | null;
}

export interface GoalShow {
  goal_id: string;
  repo: string;
  state: string;
  branch: string;
  /** false: the branch is not on the repository (the goal has pushed nothing yet). */
  pushed: boolean;
  base: { branch: string | null; merge_base: string | null };
  commits: ShownCommit[];
  commits_total: number;
  diffstat: { files: number; insertions: number; deletions: number; shown: ShownFile[] };
}

/**
 * `goal-loop show <goal-id>`: the goal's branch, its commits with their trailers, and its diffstat
 * against where it left the repository's default branch. The branch and the repository come from
 * the ledger. The repository is read as a remote (ls-remote, fetch) into a scratch repository of
 * our own: git never runs inside it, so its config (hooks, filters, diff drivers) is never read.
 */
export async function showCommand(goalId: string, values: ShowValues): Promise<number> {
  requireLedger(goalId);
  const store = await openStore();
  let goal: Awaited<ReturnType<typeof store.ledger.getGoal>>;
  try {
    const key = await findGoal(store.ledger, goalId, values.repo);
    goal = await store.ledger.getGoal(key);
  } finally {
    await store.close();
  }
  if (!goal) throw new InputError(`no goal "${goalId}" in the ledger (see \`goal-loop status\`)`);
  const shown = await readBranch(goal.repo, goal.branch);
  const out: GoalShow = { goal_id: goal.goalId, repo: redactUrls(goal.repo), state: goal.state, branch: goal.branch, ...shown };
  process.stdout.write(values.json ? `${JSON.stringify(out)}\n` : renderShow(out));
  return 0;
}

type BranchFacts = Pick<GoalShow, 'pushed' | 'base' | 'commits' | 'commits_total' | 'diffstat'>;

async function readBranch(repo: string, branch: string): Promise<BranchFacts> {
  if (!/^[A-Za-z0-9._/-]+$/.test(branch) || branch.includes('..') || branch.startsWith('-')) {
    throw new InputError(`the ledger names the branch "${plainText(branch).slice(0, 100)}", which is not a branch name goal-loop makes`);
  }
  const scratch = await mkdtemp(join(tmpdir(), 'goal-loop-show-'));
  try {
    const git = new Git();
    await git.run(scratch, ['init', '--bare', '-q', 'repo.git']);
    const gitDir = join(scratch, 'repo.git');
    // Read as a remote, from our own repository: the path is an argument, never a directory git runs in.
    const heads = await git.tryRunGitDir(gitDir, ['ls-remote', '--symref', repo, 'HEAD', `refs/heads/${branch}`]);
    if (heads === undefined) throw new InputError(`${redactUrls(repo)}: not a git repository (or not reachable)`);
    const baseBranch = /^ref: refs\/heads\/(\S+)\tHEAD$/m.exec(heads)?.[1] ?? null;
    const hasBranch = heads.split('\n').some((l) => l.endsWith(`\trefs/heads/${branch}`));
    const hasHead = heads.split('\n').some((l) => /^[0-9a-f]{40,64}\tHEAD$/.test(l));
    const empty = { diffstat: { files: 0, insertions: 0, deletions: 0, shown: [] }, commits: [], commits_total: 0 };
    if (!hasBranch) return { pushed: false, base: { branch: baseBranch, merge_base: null }, ...empty };
    const refspecs = [`+refs/heads/${branch}:refs/show/goal`, ...(hasHead ? ['+HEAD:refs/show/base'] : [])];
    await git.runGitDir(gitDir, ['fetch', '--no-tags', '-q', repo, ...refspecs]);
    const mergeBase = hasHead ? ((await git.tryRunGitDir(gitDir, ['merge-base', 'refs/show/base', 'refs/show/goal'])) ?? null) : null;
    const range = mergeBase ? [`${mergeBase}..refs/show/goal`] : ['refs/show/goal'];
    const total = Number(await git.runGitDir(gitDir, ['rev-list', '--count', ...range]));
    const log = await git.runGitDir(gitDir, ['log', `--max-count=${MAX_COMMITS}`, `--format=${LOG_FORMAT}`, ...range, '--']);
    const diffstat = mergeBase ? await diffStat(git, gitDir, mergeBase) : empty.diffstat;
    return { pushed: true, base: { branch: baseBranch, merge_base: mergeBase }, commits: parseLog(log), commits_total: total, diffstat };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

const LOG_FORMAT = [
  '%H',
  '%s',
  `%(trailers:key=${TRAILER_TASK},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_ATTEMPT},valueonly,separator=%x2C)`,
  `%(trailers:key=${TRAILER_VERIFIED},valueonly,separator=%x2C)`,
].join('%x1f');

/** Newest first, as git log prints them; every field is the repository's text, made plain. */
function parseLog(log: string): ShownCommit[] {
  return log
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [sha = '', subject = '', task = '', attempt = '', verified = ''] = line.split('\x1f');
      return { sha, subject: plainText(subject), task: plainText(task).trim(), attempt: plainText(attempt).trim(), verified: plainText(verified).trim() };
    });
}

async function diffStat(git: Git, gitDir: string, mergeBase: string): Promise<GoalShow['diffstat']> {
  const raw = await git.runGitDir(gitDir, ['diff', '--numstat', '-z', '--no-renames', '--no-ext-diff', '--no-textconv', mergeBase, 'refs/show/goal', '--']);
  const files: ShownFile[] = [];
  for (const record of raw.split('\0')) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(record);
    if (!m) continue;
    files.push({ path: plainText(m[3]!), insertions: m[1] === '-' ? null : Number(m[1]), deletions: m[2] === '-' ? null : Number(m[2]) });
  }
  const sum = (k: 'insertions' | 'deletions') => files.reduce((n, f) => n + (f[k] ?? 0), 0);
  return { files: files.length, insertions: sum('insertions'), deletions: sum('deletions'), shown: files.slice(0, MAX_FILES) };
}

function renderShow(s: GoalShow): string {
  const lines = [`${s.goal_id} · ${s.state} · ${s.repo}`, `branch ${s.branch}${s.base.branch ? ` (from ${s.base.branch}${s.base.merge_base ? ` at ${s.base.merge_base.slice(0, 12)}` : ''})` : ''}`];
  if (!s.pushed) return `${[...lines, 'no commits yet: the branch is not on the repository'].join('\n')}\n`;
  lines.push('', `commits (${s.commits_total}, newest first):`);
  for (const c of s.commits) {
    const trailers = [c.task && `task ${c.task}`, c.attempt && `attempt ${c.attempt}`, c.verified && `verified ${c.verified}`].filter(Boolean).join(' · ');
    lines.push(`  ${c.sha.slice(0, 12)} ${c.subject}${trailers ? `\n               ${trailers}` : ''}`);
  }
  if (s.commits_total > s.commits.length) lines.push(`  … ${s.commits_total - s.commits.length} more`);
  const d = s.diffstat;
  lines.push('', `diffstat: ${d.files} file${d.files === 1 ? '' : 's'} changed, +${d.insertions} -${d.deletions}`);
  for (const f of d.shown) lines.push(`  ${f.path}  ${f.insertions === null ? 'binary' : `+${f.insertions} -${f.deletions}`}`);
  if (d.files > d.shown.length) lines.push(`  … ${d.files - d.shown.length} more`);
  return `${lines.join('\n')}\n`;
}
