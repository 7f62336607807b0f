import type { Git } from './git.js';

/** One remote-tracking ref: the commit it names (undefined: not one for-each-ref can peel) and, for a symbolic one, its target. */
export interface RemoteRef {
  commit: string | undefined;
  symref: string;
}

/**
 * Every ref under `refs/remotes/<remote>/` in one git process, where prepare asked three
 * (its branch, its base, the remote's HEAD). A ref name holds no control character, so one
 * NUL-separated line per ref is unambiguous. A tag is peeled once, as `^{commit}` would peel it;
 * a tag of a tag (or a ref to a tree) is left to `rev-parse` (commit undefined).
 */
export async function remoteRefs(git: Git, dir: string, remote: string): Promise<Map<string, RemoteRef>> {
  const out = await git.run(dir, ['for-each-ref', '--format=%(refname)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)%00%(symref)', `refs/remotes/${remote}/`]);
  const refs = new Map<string, RemoteRef>();
  for (const line of out.split('\n')) {
    const [name, type, oid, peeledType, peeled, symref] = line.split('\0');
    if (!name || symref === undefined) continue;
    const commit = type === 'commit' ? oid : type === 'tag' && peeledType === 'commit' ? peeled : undefined;
    refs.set(name, { commit, symref });
  }
  return refs;
}
