import { describe, expect, it } from 'vitest';
import { tokenHeaderConfig } from '../../src/github/git-auth.js';

describe('git authentication of the App', () => {
  it('authenticates git with a per-process header only for https remotes', () => {
    const cfg = tokenHeaderConfig('https://github.com/o/r.git', 'ghs_secret');
    expect(Object.keys(cfg)).toEqual(['http.https://github.com/.extraHeader']);
    expect(Object.values(cfg)[0]).toBe(`AUTHORIZATION: basic ${Buffer.from('x-access-token:ghs_secret').toString('base64')}`);
    expect(tokenHeaderConfig('/tmp/repo.git', 'ghs_secret')).toEqual({});
  });
});
