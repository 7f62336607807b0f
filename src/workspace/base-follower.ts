import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BaseFollowed, FollowBaseMode } from '../ports/workspace.js';
import { type Git, GitError } from './git.js';
import { CHECKPOINT_LOG_FORMAT, parseCheckpointLog } from './trailers.js';

/** What git said about a conflict, and the change that no longer applies, as fed to the agent: bounded. */
const DETAIL_CHARS = 6000;

export interface BaseReplay {
  git: Git;
  dir: string;
  goalId: string;
  /** The goal branch's tip, the base commit it left from, and the base branch's tip now. */
  head: string;
  from: string;
  onto: string;
  /** The goal's task ids: a commit naming another counts as a person's. */
  tasks: ReadonlySet<string>;
  /** The tree at a commit, setup's output kept (the workspace's own reset). */
  resetTo(target: string): Promise<void>;
}

export type Replayed = Omit<BaseFollowed, 'push' | 'checkpoints' | 'conflict'> & {
  tip: string;
  conflict?: NonNullable<BaseFollowed['conflict']> & { personal?: boolean };
  /** The branch was left as it was: nothing to push. */
  kept?: boolean;
};

/**
 * Brings the branch at `head` onto `onto` in the workspace (see Workspace.followBase). Host git
 * only, hardened as every command of the bot's (no hooks, no filters or merge drivers: those
 * need config, and only the bot's own is read); what it replays are the goal's checkpoints, each
 * already checked when it was made, and a person's commits on the branch.
 */
export async function replayOntoBase(r: BaseReplay, mode: FollowBaseMode): Promise<Replayed> {
  // The repository's own .gitattributes could pick `merge=union` (built in: no config needed) and
  // hide a conflict; info/attributes comes first, for this replay only.
  const attributes = join(r.dir, '.git', 'info', 'attributes');
  await mkdir(dirname(attributes), { recursive: true });
  await writeFile(attributes, '* merge=text\n');
  try {
    if (mode === 'merge') {
      const merged = await mergeBase(r);
      if (merged) return merged;
      const rebased = await rebase(r);
      return { ...rebased, note: `the merge of the base branch conflicted: rebased instead, so that ${rebased.conflict?.taskId ?? 'the commit'} can be repaired on the new base` };
    }
    return await rebase(r);
  } finally {
    await rm(attributes, { force: true });
  }
}

/** One merge commit of `onto` on top of the branch; undefined when it conflicts (nothing changed then). */
async function mergeBase(r: BaseReplay): Promise<Replayed | undefined> {
  await r.resetTo(r.head);
  const message = `Merge the base branch (${r.onto.slice(0, 12)}) into the goal branch\n\ngoal-loop followed the base branch: no checkpoint changed.\n`;
  try {
    await r.git.run(r.dir, ['merge', '--quiet', '--no-ff', '--no-edit', '--no-verify', '--no-log', '-m', message, r.onto]);
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    const conflicts = await conflicted(r);
    await r.git.tryRun(r.dir, ['merge', '--abort']);
    await r.resetTo(r.head);
    if (conflicts.length > 0) return undefined;
    throw err;
  }
  const tip = await r.git.run(r.dir, ['rev-parse', 'HEAD']);
  const commits = await ownCommits(r, tip);
  const replayed = commits.flatMap((c) => (c.taskId ? [{ taskId: c.taskId, sha: c.sha }] : []));
  return { mode: 'merge', from: r.from, onto: r.onto, replayed, dropped: [], commits, tip };
}

/** The branch's own commits (merges left out: what they brought is in the base) replayed on `onto`, one by one. */
async function rebase(r: BaseReplay): Promise<Replayed> {
  const commits = await ownCommits(r);
  await r.resetTo(r.onto);
  for (const [i, { sha, taskId }] of commits.entries()) {
    try {
      await r.git.run(r.dir, ['cherry-pick', '--allow-empty', '--keep-redundant-commits', sha]);
    } catch (err) {
      if (!(err instanceof GitError)) throw err;
      const files = await conflicted(r);
      if (files.length === 0) {
        await r.git.tryRun(r.dir, ['cherry-pick', '--abort']);
        throw err;
      }
      const detail = await conflictDetail(r, sha, files);
      await r.git.tryRun(r.dir, ['cherry-pick', '--abort']);
      const conflict = { ...(taskId ? { taskId } : {}), sha, files, detail };
      // A person's commit that conflicts, or that would be left out: no task can redo it. The branch stays as it was.
      if (commits.slice(i).some((c) => !c.taskId)) {
        await r.resetTo(r.head);
        return {
          mode: 'rebase',
          from: r.from,
          onto: r.onto,
          replayed: [],
          conflict: { ...conflict, personal: true },
          dropped: [],
          commits: await ownCommits(r, r.head, r.from),
          tip: r.head,
          kept: true,
        };
      }
      const tip = await r.git.run(r.dir, ['rev-parse', 'HEAD']);
      await r.resetTo(tip);
      const later = commits.slice(i + 1).map((c) => c.taskId);
      const dropped = [...new Set(later.filter((t): t is string => t !== undefined && t !== taskId))];
      const now = await ownCommits(r, tip);
      return { mode: 'rebase', from: r.from, onto: r.onto, replayed: tasksOf(now), conflict, dropped, commits: now, tip };
    }
  }
  const tip = await r.git.run(r.dir, ['rev-parse', 'HEAD']);
  await r.resetTo(tip);
  const now = await ownCommits(r, tip);
  return { mode: 'rebase', from: r.from, onto: r.onto, replayed: tasksOf(now), dropped: [], commits: now, tip };
}

const tasksOf = (commits: Replayed['commits']): Replayed['replayed'] => commits.flatMap((c) => (c.taskId ? [{ taskId: c.taskId, sha: c.sha }] : []));

/** The branch's commits not in `onto`, oldest first, each with its task (a checkpoint of this goal) or none (a person's). */
async function ownCommits(r: BaseReplay, head = r.head, base = r.onto): Promise<Array<{ sha: string; taskId?: string }>> {
  const log = await r.git.run(r.dir, ['log', '--reverse', '--topo-order', '--no-merges', `--format=${CHECKPOINT_LOG_FORMAT}`, `${base}..${head}`]);
  return log
    .split('\x1e')
    .map((record) => record.trim())
    .filter(Boolean)
    .map((record) => {
      const sha = record.split('\x1f')[0] ?? '';
      const taskId = parseCheckpointLog(`${record}\x1e`, r.goalId)[0]?.taskId;
      return { sha, ...(taskId && r.tasks.has(taskId) ? { taskId } : {}) };
    });
}

async function conflicted(r: BaseReplay): Promise<string[]> {
  const out = await r.git.tryRun(r.dir, ['diff', '--name-only', '--diff-filter=U', '-z']);
  return (out ?? '').split('\0').filter(Boolean);
}

/** The conflict as git left it in the files (markers), then the change that no longer applies. */
async function conflictDetail(r: BaseReplay, sha: string, files: string[]): Promise<string> {
  const markers = (await r.git.tryRun(r.dir, ['diff', '--no-color', '--no-ext-diff'])) ?? '';
  const change = (await r.git.tryRun(r.dir, ['show', '--no-color', '--no-ext-diff', '--format=%s', '--stat', '--patch', sha])) ?? '';
  const half = DETAIL_CHARS / 2;
  const cut = (text: string) => (text.length > half ? `${text.slice(0, half)}\n[… ${text.length - half} more characters]` : text);
  const which = `${files.length} file(s) in conflict (${files.slice(0, 10).join(', ')}${files.length > 10 ? ', …' : ''})`;
  return [
    `Its change no longer applies to the base branch: ${which}.`,
    `The conflict, as git marked it:\n${cut(markers)}`,
    `The change as it was checkpointed before (${sha.slice(0, 12)}):\n${cut(change)}`,
    // Last: a one-line summary of a failure (the terminal, the status comment) is its last line.
    `Make the same change again on the tree as it is now: ${which} with the new base.`,
  ].join('\n\n');
}
