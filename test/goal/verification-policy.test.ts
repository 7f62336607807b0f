import { describe, expect, it } from 'vitest';
import { protectedScriptNames } from '../../src/goal/verification-policy.js';

describe('protectedScriptNames', () => {
  it('names the package scripts the verification runs', () => {
    expect(protectedScriptNames({ verification: 'npm ci && npm run lint && npm test' })).toEqual(['install', 'prepublish', 'prepare', 'dependencies', 'lint', 'test']);
    expect(protectedScriptNames({ verification: 'bash scripts/check.sh' })).toEqual([]);
  });

  it('names none for a task that may edit its tests', () => {
    expect(protectedScriptNames({ verification: 'npm test', may_edit_tests: true })).toEqual([]);
  });
});
