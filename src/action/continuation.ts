import type { Octokit } from '../github/github-forge.js';
import { createOptions } from '../github/write-options.js';

export interface Continuation {
  owner: string;
  repo: string;
  /** The workflow file (or id) to dispatch. */
  workflow: string;
  /** The branch its definition is read from. */
  ref: string;
  issueNumber: number;
}

/**
 * Starts the goal's next run: a `workflow_dispatch` of this workflow with the goal's issue (the one
 * event a workflow token may trigger). Sent once: a create that fails is not re-sent (a 5xx may come
 * after GitHub queued the run); the next event on the goal resumes it anyway.
 */
export async function dispatchContinuation(o: Octokit, c: Continuation): Promise<void> {
  await o.rest.actions.createWorkflowDispatch({
    owner: c.owner,
    repo: c.repo,
    workflow_id: c.workflow,
    ref: c.ref,
    inputs: { issue: String(c.issueNumber) },
    ...createOptions('urgent'),
  });
}
