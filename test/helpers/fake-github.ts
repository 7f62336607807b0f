/**
 * The stateful fake of the GitHub API lives in ./fake-github/ (split by concern); this module keeps
 * the original import path working.
 */
export * from './fake-github/index.js';
