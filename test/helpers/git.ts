import { execFileSync } from 'node:child_process';

/** Plain git for assertions (not the bot's hardened runner). */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } }).trim();
}

/** `[{task, attempt, subject}]` of a branch's checkpoint commits, oldest first. */
export function checkpointCommits(gitDir: string, branch: string): Array<{ task: string; attempt: string; goal: string; subject: string }> {
  try {
    git(gitDir, 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`);
  } catch {
    return []; // the branch does not exist (yet)
  }
  const out = git(gitDir, 'log', '--reverse', '--format=%s%x1f%(trailers:key=Goal-Task,valueonly)%x1f%(trailers:key=Goal-Attempt,valueonly)%x1f%(trailers:key=Goal-Id,valueonly)%x1e', branch);
  return out
    .split('\x1e')
    .map((r) => r.trim())
    .filter(Boolean)
    .map((r) => {
      const [subject = '', task = '', attempt = '', goal = ''] = r.split('\x1f').map((x) => x.trim());
      return { subject, task, attempt, goal };
    })
    .filter((c) => c.task !== '');
}
