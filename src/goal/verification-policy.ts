import { type BaselinePolicy, DEFAULT_TEST_PATHS, stricterBaseline, type VerificationPolicy } from './evidence.js';
import type { GoalSpec, TaskSpec } from './schema.js';
import { verificationPackageScripts, verificationScripts } from './verification-scripts.js';

/** The repo config's verification keys (absent: the defaults). */
export interface VerificationConfig {
  verification_baseline?: BaselinePolicy;
  test_paths?: readonly string[];
  verify_with_base_tests?: boolean;
}

/** The rules in force: the repo config's, which a spec may only tighten (and add paths to). */
export function verificationPolicy(config: VerificationConfig, spec: Pick<GoalSpec, 'verification_baseline' | 'verification_paths' | 'verify_with_base_tests'>): VerificationPolicy {
  return {
    baseline: stricterBaseline(config.verification_baseline ?? 'warn', spec.verification_baseline),
    testPaths: [...(config.test_paths ?? DEFAULT_TEST_PATHS), ...(spec.verification_paths ?? [])],
    verifyWithBaseTests: (config.verify_with_base_tests ?? false) || spec.verify_with_base_tests === true,
  };
}

/**
 * What the task may add to but not change: the test paths, its own `verification_paths`, and the
 * scripts its verification runs by path. None when it says `may_edit_tests`.
 */
export function protectedTestPaths(policy: VerificationPolicy, task: Pick<TaskSpec, 'verification' | 'verification_paths' | 'may_edit_tests'>): string[] {
  if (task.may_edit_tests) return [];
  return [...new Set([...policy.testPaths, ...(task.verification_paths ?? []), ...verificationScripts(task.verification).map(literalGlob)])];
}

/**
 * The root package.json scripts the task's verification runs (`test` for `npm test`): the task may
 * not add, change or remove them or their pre/post hooks. None when it says `may_edit_tests`.
 */
export function protectedScriptNames(task: Pick<TaskSpec, 'verification' | 'may_edit_tests'>): string[] {
  return task.may_edit_tests ? [] : verificationPackageScripts(task.verification);
}

/** A path as a glob that matches only itself. */
function literalGlob(path: string): string {
  return path.replace(/[*?[\]{}()!+@\\]/g, '\\$&');
}
