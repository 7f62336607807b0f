import { describe, expect, it } from 'vitest';
import { STATUS_MARKER } from '../../src/steering/report/status-comment.js';
import { checkpointCommits, git } from '../helpers/git.js';
import { appHarness, goalBlock } from '../helpers/github-app-harness.js';
import { closingReferences, liveReferences, mentions, references } from '../helpers/github-references.js';
import { issuesLabeled } from '../helpers/webhook-payloads.js';

/** A mention, a link, an image and a closing reference, as an issue or a model may write them. */
const PAYLOAD = '@octocat [x](https://evil) ![i](https://evil/i.png) Fixes #1';
const TITLE = 'fixes #1, closes org/other#2 @someone';

describe('GitHub App: untrusted text is inert wherever the bot writes it', () => {
  it('the invalid-spec comment names a hostile key without a live mention, link, image or reference', async () => {
    const body = goalBlock(`
objective: Do it
"${PAYLOAD}": 1
tasks:
  - id: t1
    title: One
    verification: "true"
    "${PAYLOAD}": 2
`);
    const issue = { number: 31, title: 'Hostile keys', body, user: 'alice' };
    const h = await appHarness({ issues: [issue] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    const posted = h.fake.commentsOn(31).filter((c) => /cannot run the/.test(c.body));
    expect(posted).toHaveLength(1);
    const text = posted[0]!.body.replace(/\n\n<!-- goal-loop:effect [\w.-]+ -->$/, '');
    const inert = '@\u200boctocat \\[x\\](https:\u2060//evil) !\\[i\\](https:\u2060//evil/i.png) Fixes #\u20601';
    expect(text).toBe(
      [
        'goal-loop cannot run the ```goal block of this issue:',
        '',
        `- tasks\\[0\\]: unknown key "${inert}" (task "t1")`,
        `- (root): unknown key "${inert}"`,
        '',
        'Edit the issue and comment `/goal start`.',
      ].join('\n'),
    );
    expect(liveReferences(text)).toEqual([]);
    // Only invisible characters and backslashes were added: a reader sees the key as written.
    expect(text.replace(/[\u200b\u2060\\]/g, '')).toContain(`unknown key "${PAYLOAD}"`);
  });

  it('a hostile task title: the checkpoint subject keeps `<task-id>: <title>` but closes and mentions nothing; the mermaid label and the PR title are inert too', async () => {
    const body = goalBlock(`
objective: "${TITLE} ${PAYLOAD}"
tasks:
  - id: task-01
    title: "${TITLE}"
    run: echo 1 > one.txt
    verification: test -f one.txt
`);
    const issue = { number: 32, title: 'Hostile title', body, user: 'alice' };
    const h = await appHarness({ issues: [issue] });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    const branch = h.fake.pulls[0]!.head;
    const [commit] = checkpointCommits(h.repo.bare, branch);
    expect(commit).toMatchObject({ task: 'task-01', attempt: '1', goal: '32' });
    const message = git(h.repo.bare, 'log', '-1', '--format=%B', branch);
    expect(commit!.subject.startsWith('task-01: ')).toBe(true);
    expect(closingReferences(message)).toEqual([]);
    expect(mentions(message)).toEqual([]);
    expect(liveReferences(commit!.subject)).toEqual([]);
    // Readable: the title as written, with invisible joiners only.
    expect(commit!.subject.replace(/[\u200b\u2060]/g, '')).toBe(`task-01: ${TITLE}`);

    const pr = h.fake.pulls[0]!;
    expect(pr.title.startsWith('goal #32: ')).toBe(true);
    // A title is plain text (no markdown links), but GitHub links its references.
    const prTitle = pr.title.slice('goal #32: '.length);
    expect([...closingReferences(prTitle), ...mentions(prTitle), ...references(prTitle)]).toEqual([]);
    expect(prTitle.replace(/[\u200b\u2060]/g, '')).toBe(`${TITLE} ${PAYLOAD}`);

    const status = h.fake.commentsOn(32).find((c) => c.body.includes(STATUS_MARKER))!.body;
    const mermaid = /```mermaid\n([\s\S]*?)\n```/.exec(status)![1]!;
    const label = /t0\["(.*)"\]/.exec(mermaid)![1]!;
    // Outside mermaid's own entity codes (in a fenced block GitHub links nothing anyway).
    expect(liveReferences(label.replace(/#(35|64|quot|lt|gt);/g, ''))).toEqual([]);
    expect(label).not.toMatch(/[@<>[\]]/);
    // Mermaid shows `#35;` as `#` and `#64;` as `@`: the label reads as the title.
    expect(
      label
        .replace(/#35;/g, '#')
        .replace(/#64;/g, '@')
        .replace(/\u2060/g, ''),
    ).toBe(`task-01: ${TITLE}`);
  });
});
