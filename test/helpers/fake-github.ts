/**
 * The stateful fake of the GitHub API lives in ./fake-github/ (split by concern); this module keeps
 * the original import path working.
 */
export type {
  FakeCheckRun,
  FakeComment,
  FakeDispatch,
  FakeGitHub,
  FakeGitHubOptions,
  FakeIssue,
  FakeIssueSeed,
  FakeLabel,
  FakePull,
  FakePullSeed,
  FakeReaction,
  FakeReview,
  FakeReviewComment,
  FakeWorkflowRun,
  FaultFilter,
  FaultKind,
  GraphQLCall,
  Permission,
  RecordedRequest,
  ReviewState,
  UserType,
  WorkflowRunStatus,
} from './fake-github/index.js';
export { API, fakeGitHub } from './fake-github/index.js';
