import type { ProbotOctokit } from 'probot';
import type { GitHubGoal } from '../steering/goal-meta.js';
import { STATE_LABELS, type StateLabel } from '../steering/labels.js';
import { writeOptions } from './write-options.js';

type Octokit = InstanceType<typeof ProbotOctokit>;

/**
 * Both in one GraphQL document, whose mutations GitHub runs in order: the new label first, so a
 * failure midway leaves two labels (fixed by the retry), never none.
 */
const SWAP = `mutation($issue: ID!, $add: [ID!]!, $remove: [ID!]!) {
  addLabelsToLabelable(input: { labelableId: $issue, labelIds: $add }) { clientMutationId }
  removeLabelsFromLabelable(input: { labelableId: $issue, labelIds: $remove }) { clientMutationId }
}`;

interface IssueLabel {
  name: string;
  nodeId: string | undefined;
}

/**
 * Shows `label` as the issue's one state label, in one write when it changes: an add when there
 * is no other state label, else add-and-remove in one GraphQL request. Only state labels ever go:
 * the issue's other labels (people's) are never part of the write, so none can be lost.
 */
export async function replaceStateLabel(o: Octokit, g: Pick<GitHubGoal, 'owner' | 'repo' | 'issueNumber'>, label: StateLabel): Promise<void> {
  const { owner, repo, issueNumber } = g;
  const { data: issue } = await o.rest.issues.get({ owner, repo, issue_number: issueNumber });
  const current: IssueLabel[] = issue.labels.map((l) => (typeof l === 'string' ? { name: l, nodeId: undefined } : { name: l.name ?? '', nodeId: l.node_id }));
  const stale = current.filter((l) => (STATE_LABELS as readonly string[]).includes(l.name) && l.name !== label);
  const present = current.some((l) => l.name === label);
  if (stale.length === 0) {
    if (!present) await o.rest.issues.addLabels({ owner, repo, issue_number: issueNumber, labels: [label], ...writeOptions('normal') });
    return;
  }
  const labelId = present ? undefined : await labelNodeId(o, g, label);
  const staleIds = stale.map((l) => l.nodeId);
  if (!present && labelId !== undefined && staleIds.every((id) => id !== undefined)) {
    await o.graphql(SWAP, { issue: issue.node_id, add: [labelId], remove: staleIds, ...writeOptions('normal') });
    return;
  }
  // The label is new to the repository (adding it by name creates it), or only stale ones go.
  if (!present) await o.rest.issues.addLabels({ owner, repo, issue_number: issueNumber, labels: [label], ...writeOptions('normal') });
  for (const l of stale) {
    await o.rest.issues.removeLabel({ owner, repo, issue_number: issueNumber, name: l.name, ...writeOptions('normal') }).catch((err: { status?: number }) => {
      if (err.status !== 404) throw err;
    });
  }
}

/** The repository label's node id, or undefined when the repository has no such label yet. */
async function labelNodeId(o: Octokit, g: Pick<GitHubGoal, 'owner' | 'repo'>, name: string): Promise<string | undefined> {
  try {
    return (await o.rest.issues.getLabel({ owner: g.owner, repo: g.repo, name })).data.node_id;
  } catch (err) {
    if ((err as { status?: number }).status === 404) return undefined;
    throw err;
  }
}
