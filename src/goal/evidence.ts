import { z } from 'zod';

/**
 * Verification evidence (DESIGN.md §10): a task's verification proves the task only if it failed
 * before the task's change (red) and passes after it (green).
 */

/** What a checkpoint's verification proves, as its `Goal-Verified` trailer says. */
export const EVIDENCE = ['red->green', 'green->green', 'unchecked'] as const;
export type Evidence = (typeof EVIDENCE)[number];

/** What to do when a task's verification already passes before the task ran; stricter later in the list. */
export const BASELINE_POLICIES = ['off', 'warn', 'require_red'] as const;
export type BaselinePolicy = (typeof BASELINE_POLICIES)[number];

export const BaselinePolicySchema = z
  .enum(BASELINE_POLICIES)
  .describe(
    "Before a task's first attempt its verification runs on the tree without the task's change (the baseline). `require_red`: a verification that already passes escalates the task at once (unless the task says `expect: green`); `warn`: the task runs, and the PR, check run and status comment say its verification passed before it ran; `off`: no baseline (evidence `unchecked`).",
  );

/** Test files a task may add to but not change or delete (those at the goal's base). */
export const DEFAULT_TEST_PATHS = [
  'test/**',
  'tests/**',
  'spec/**',
  '**/test/**',
  '**/tests/**',
  '**/__tests__/**',
  '**/*.test.*',
  '**/*.spec.*',
  '**/*_test.*',
  '**/test_*.py',
  // ava's and tape's single-file layouts (`test.js`, `test-helpers.js`), common in small packages.
  '**/test.*',
  '**/test-*.*',
];

/** A task's verification outcome on the tree without its change. */
export type Baseline = 'red' | 'green';

/** The evidence a checkpoint carries, from the task's baseline (none: the baseline was off). */
export function evidenceFor(baseline: Baseline | undefined): Evidence {
  if (baseline === 'red') return 'red->green';
  if (baseline === 'green') return 'green->green';
  return 'unchecked';
}

/** The stricter of two policies: a spec may only tighten the repo config. */
export function stricterBaseline(config: BaselinePolicy, spec: BaselinePolicy | undefined): BaselinePolicy {
  if (!spec) return config;
  return BASELINE_POLICIES.indexOf(spec) > BASELINE_POLICIES.indexOf(config) ? spec : config;
}

/** The verification rules in force for a goal: repo config, tightened by the spec. */
export interface VerificationPolicy {
  baseline: BaselinePolicy;
  /** Globs of test files (repo config `test_paths`, plus the goal's `verification_paths`). */
  testPaths: readonly string[];
  /** Restore the protected files' versions before each verification. */
  verifyWithBaseTests: boolean;
}

export const DEFAULT_VERIFICATION_POLICY: Readonly<VerificationPolicy> = Object.freeze({ baseline: 'warn', testPaths: DEFAULT_TEST_PATHS, verifyWithBaseTests: false });
