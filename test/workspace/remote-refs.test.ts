import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSampleRepo } from '../../src/demo/sample-repo.js';
import { Git } from '../../src/workspace/git.js';
import { remoteRefs } from '../../src/workspace/remote-refs.js';
import { git } from '../helpers/git.js';
import { tempDir } from '../helpers/temp.js';

describe('remoteRefs', () => {
  it("reads every remote-tracking ref in one look: a branch's commit, a tag peeled to its commit, a tag of a tag or a tree left to rev-parse, HEAD's target", async () => {
    const repo = await createSampleRepo(join(await tempDir(), 'sample'));
    const w = repo.work;
    const head = git(w, 'rev-parse', 'HEAD');
    const id = ['-c', 'user.name=Human', '-c', 'user.email=h@example.com'];
    git(w, ...id, 'tag', '-a', 'v1', '-m', 'one', head);
    git(w, ...id, 'tag', '-a', 'v1-again', '-m', 'a tag of a tag', 'refs/tags/v1');
    git(w, 'update-ref', 'refs/remotes/origin/tagged', 'refs/tags/v1');
    git(w, 'update-ref', 'refs/remotes/origin/twice', 'refs/tags/v1-again');
    git(w, 'update-ref', 'refs/remotes/origin/tree', git(w, 'rev-parse', 'HEAD^{tree}'));
    git(w, 'symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/remotes/origin/main');
    const refs = await remoteRefs(new Git(), w, 'origin');
    expect(Object.fromEntries(refs)).toEqual({
      'refs/remotes/origin/HEAD': { commit: head, symref: 'refs/remotes/origin/main' },
      'refs/remotes/origin/main': { commit: head, symref: '' },
      'refs/remotes/origin/tagged': { commit: head, symref: '' },
      'refs/remotes/origin/twice': { commit: undefined, symref: '' },
      'refs/remotes/origin/tree': { commit: undefined, symref: '' },
    });
    // What rev-parse would say of each.
    expect(git(w, 'rev-parse', 'refs/remotes/origin/twice^{commit}')).toBe(head);
  });
});
