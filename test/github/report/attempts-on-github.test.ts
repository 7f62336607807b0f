import { describe, expect, it, onTestFinished } from 'vitest';
import { ESCALATION_MARKER } from '../../../src/steering/report/status-comment.js';
import { FakeAnthropic, type MessagesBody, promptText, reply, text, toolUse } from '../../helpers/fake-anthropic.js';
import { checkpointCommits, git } from '../../helpers/git.js';
import { appHarness, goalBlock } from '../../helpers/github-app-harness.js';
import { issuesLabeled } from '../../helpers/webhook-payloads.js';
import { markdownProblems, prose } from '../../steering/report/markdown-structure.js';

/**
 * A model that writes greeting.txt: the wrong words, unless the prompt says the previous attempt
 * failed and `learns` is set. Then it says it is done. Its words carry markup that must stay inert.
 */
function greeter(fake: FakeAnthropic, learns: boolean): void {
  fake.otherwise((body: MessagesBody, i) => {
    if (body.messages.length > 1) return reply([text('I wrote greeting.txt. <img src=x onerror=alert(1)> @someone </details>')]);
    const retry = promptText(body).includes('The previous attempt failed');
    return reply([toolUse('write_file', { path: 'greeting.txt', content: learns && retry ? 'hello world\n' : 'hi\n' }, `toolu_w${i}`)]);
  });
}

const VERIFY = `grep -q 'hello world' greeting.txt || { echo 'src/index.js(1,14): error TS2322: greeting.txt says the wrong thing'; echo '@someone </details> <img src=x onerror=alert(1)>'; exit 1; }`;

function expectInert(md: string): void {
  expect(markdownProblems(md)).toEqual([]);
  const p = prose(md);
  expect(p).not.toMatch(/(?<!\\)<img/);
  expect(p).not.toContain('@someone');
  expect(p.split('\n').filter((l) => l.includes('</details>') && l !== '</details>')).toEqual([]);
}

describe('every attempt on GitHub: the check run, the escalation comment, the PR body', () => {
  it("a task that fails once then passes: the check run shows each attempt's tool calls and verification tail; the PR body lists its commit and change", async () => {
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    greeter(fake, true);
    const body = goalBlock(`
objective: Greet the world
tasks:
  - id: greet
    title: Write greeting.txt
    verification: "${VERIFY.replace(/"/g, '\\"')}"
    max_retries: 2
`);
    const issue = { number: 41, title: 'Greet', body, user: 'alice', labels: ['goal'] };
    const h = await appHarness({ issues: [issue], claudeEnv: fake.env() });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    expect(h.fake.violations).toEqual([]);
    expect(fake.violations).toEqual([]);
    const branch = 'goal/41-greet';
    expect(checkpointCommits(h.repo.bare, branch).map((c) => c.task)).toEqual(['greet']);
    const run = h.fake.checkRuns.filter((c) => c.name === 'goal-loop').at(-1)!;
    expect(run).toMatchObject({ status: 'completed', conclusion: 'success' });
    const out = run.output!;
    expect(out.summary).toMatch(/- ✅ `greet` done \(attempt 2\) · `red → green` · 2 attempt\(s\) recorded, last: passed/);
    const textOut = String(out.text);
    expect(textOut).toContain('<summary><code>greet</code> attempt 1: failed');
    expect(textOut).toContain('<summary><code>greet</code> attempt 2: passed');
    // Each attempt's tool call, and the first one's verification tail.
    expect(textOut.match(/↳ `write_file` `"greeting\.txt"`/g)).toHaveLength(2);
    expect(textOut).toContain('greeting.txt says the wrong thing');
    expect(textOut).toMatch(/\*\*Verify\*\* ❌ /);
    expect(textOut).toMatch(/\*\*Verify\*\* ✅ /);
    expect(textOut).toMatch(
      /\*\*Checkpoint\*\* \[`[0-9a-f]{7}`\]\(https:\/\/github\.com\/octo-org\/widgets\/commit\/[0-9a-f]{40}\) · `red → green`: its verification failed before the task's change and passes with it · 1 file\(s\), \+1 -0/,
    );
    expectInert(textOut);
    // The task passed: nothing left to annotate.
    expect(run.annotations).toEqual([]);

    const sha = git(h.repo.bare, 'rev-parse', branch);
    const pr = h.fake.pulls[0]!;
    expect(pr.body).toContain(
      `### Changes per task\n\n- \`greet\` ([\`${sha.slice(0, 7)}\`](https://github.com/octo-org/widgets/commit/${sha})) · \`red → green\` · 1 file(s), +1 -0 — \`greeting.txt\``,
    );
  });

  it("an escalating task: the comment shows each attempt's tool calls and verification tail; the check run annotates the file the output names", async () => {
    const fake = await FakeAnthropic.start();
    onTestFinished(() => fake.close());
    greeter(fake, false);
    const body = goalBlock(`
objective: Greet the world, and more
tasks:
  - id: greet
    title: Write greeting.txt
    verification: "${VERIFY.replace(/"/g, '\\"')}"
    max_retries: 2
  - id: free
    title: Add free.txt
    run: echo free > free.txt
    verification: test -f free.txt
`);
    const issue = { number: 42, title: 'Greet more', body, user: 'maya', assignees: ['alice'], labels: ['goal'] };
    const h = await appHarness({ issues: [issue], claudeEnv: fake.env() });
    await h.deliver('issues', issuesLabeled({ ...h.repoSpec, issue, label: 'goal' }));

    expect(h.fake.violations).toEqual([]);
    const escalation = h.fake.commentsOn(42).find((c) => c.body.includes(ESCALATION_MARKER))!;
    expect(escalation).toBeDefined();
    const md = escalation.body;
    expect(md).toContain('#### Each attempt');
    for (const n of [1, 2]) expect(md).toContain(`<summary><code>greet</code> attempt ${n}: failed`);
    expect(md.match(/↳ `write_file` `"greeting\.txt"`/g)).toHaveLength(2);
    expect(md.match(/\*\*What failed:\*\* `grep -q 'hello world' greeting.txt/g)).toHaveLength(2);
    expect(md.match(/src\/index\.js\(1,14\): error TS2322: greeting\.txt says the wrong thing/g)!.length).toBeGreaterThanOrEqual(2);
    expect(md).toContain("**The agent's last words:** I wrote greeting.txt.");
    expectInert(md.replace('@alice', ''));
    expect(md.length).toBeLessThanOrEqual(65_536);

    const run = h.fake.checkRuns.filter((c) => c.name === 'goal-loop').at(-1)!;
    expect(run).toMatchObject({ status: 'completed', conclusion: 'failure' });
    expect(run.annotations).toEqual([
      expect.objectContaining({ path: 'src/index.js', start_line: 1, end_line: 1, start_column: 14, annotation_level: 'failure', message: 'error TS2322: greeting.txt says the wrong thing' }),
    ]);
    expect(String(run.output!.text)).toContain('<details open><summary><code>greet</code> attempt 2: failed');
  });
});
