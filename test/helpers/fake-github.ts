/**
 * The stateful fake of the GitHub API lives in ./fake-github/ (split by concern); this module keeps
 * the original import path working.
 */
export type {
  FakeAnnotationSeed,
  FakeApp,
  FakeCheckRun,
  FakeCheckRunSeed,
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
  FakeStatus,
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
export { API, CI_APP, fakeGitHub, LOGS_HOST } from './fake-github/index.js';
