import { describe, expect, it } from 'vitest';
import { parseRepoConfig } from '../../../src/config/repo-config.js';
import type { GoalSpec } from '../../../src/goal/schema.js';
import { type IssuePlan, TEMPLATE_COMMENT } from '../../../src/steering/plan-from-issue.js';
import { decideTurn, type TurnFacts, type TurnStep } from '../../../src/steering/turn/decide-turn.js';
import { liveReferences } from '../../helpers/github-references.js';

const config = parseRepoConfig({});
const strict = parseRepoConfig({ require_plan_approval: true });
const spec = { goal_id: '7', objective: 'Do it', tasks: [{ id: 'task-01' }, { id: 'task-02' }] } as unknown as GoalSpec;
const one = { ...spec, tasks: [{ id: 'task-01' }] } as unknown as GoalSpec;
const block: TurnFacts['issue'] = { plan: { kind: 'spec', spec }, hasBlock: true };
const noBlock: TurnFacts['issue'] = { plan: { kind: 'none' }, hasBlock: false };
const modelPlanEarlier: TurnFacts['issue'] = { plan: { kind: 'spec', spec }, hasBlock: false };
const invalid: IssuePlan = { kind: 'invalid', errors: ['tasks: required', 'objective: required'] };

/** Facts of a turn that got as far as it can: a valid config, a goal block, the spec stored, a sandbox. */
function facts(over: Partial<TurnFacts> = {}): TurnFacts {
  return {
    mode: 'run',
    state: 'TASK_PENDING',
    config: { ok: true, config },
    meta: { hasPlannedSpec: false },
    hasPlanner: false,
    issue: block,
    specStored: true,
    sandbox: { ok: true },
    ...over,
  };
}

const APPROVE = (who: string, n: string) => `${who} (${n}) is in the status comment. A maintainer can start it with \`/goal approve\`, or edit the issue with a \`\`\`goal block.`;

const table: [name: string, TurnFacts, TurnStep][] = [
  [
    'an invalid config stops the goal and names the bad keys',
    facts({ config: { ok: false, problems: ['max_retries: too big', 'label: empty'] } }),
    {
      kind: 'rest',
      state: 'STOPPED',
      reason: 'invalid .github/goal-loop.yml',
      comment: 'goal-loop cannot run: `.github/goal-loop.yml` is invalid.\n\n- max_retries: too big\n- label: empty\n\nFix the file and comment `/goal start`.',
    },
  ],
  [
    'an invalid config wins over /goal status',
    facts({ mode: 'status', config: { ok: false, problems: ['x'] } }),
    { kind: 'rest', state: 'STOPPED', reason: 'invalid .github/goal-loop.yml', comment: 'goal-loop cannot run: `.github/goal-loop.yml` is invalid.\n\n- x\n\nFix the file and comment `/goal start`.' },
  ],
  ['/goal status refreshes the status comment, nothing else', facts({ mode: 'status', issue: undefined }), { kind: 'status', config }],
  ['a new goal announces itself before reading the issue', facts({ state: 'INITIALIZING', issue: undefined }), { kind: 'read-plan', config, announce: true }],
  ['a goal under way reads the issue without announcing', facts({ state: 'ESCALATED', issue: undefined }), { kind: 'read-plan', config, announce: false }],
  ['no goal block and a model: the model writes the plan', facts({ issue: noBlock, hasPlanner: true }), { kind: 'write-plan', config }],
  [
    'the planner failed: stopped, with its message',
    facts({ issue: noBlock, hasPlanner: true, written: { ok: false, message: 'rate limited' } }),
    {
      kind: 'rest',
      state: 'STOPPED',
      reason: 'the planner failed',
      comment: 'goal-loop could not write a plan for this issue:\n\nrate limited\n\nAdd a ```goal block to the issue and comment `/goal start`.',
    },
  ],
  [
    'no goal block, no model: the template, once',
    facts({ issue: noBlock }),
    { kind: 'rest', state: 'STOPPED', reason: 'the issue has no ```goal block', comment: TEMPLATE_COMMENT, markTemplatePosted: true },
  ],
  [
    'no goal block, no model, template posted before: no comment',
    facts({ issue: noBlock, meta: { hasPlannedSpec: false, templatePosted: true } }),
    { kind: 'rest', state: 'STOPPED', reason: 'the issue has no ```goal block', markTemplatePosted: true },
  ],
  [
    'the model wrote no usable plan: the template',
    facts({ issue: noBlock, hasPlanner: true, written: { ok: true, plan: { kind: 'none' } } }),
    { kind: 'rest', state: 'STOPPED', reason: 'the issue has no ```goal block', comment: TEMPLATE_COMMENT, markTemplatePosted: true },
  ],
  [
    'an invalid goal block stops the goal with its errors',
    facts({ issue: { plan: invalid, hasBlock: true } }),
    {
      kind: 'rest',
      state: 'STOPPED',
      reason: 'invalid goal spec',
      comment: 'goal-loop cannot run the ```goal block of this issue:\n\n- tasks: required\n- objective: required\n\nEdit the issue and comment `/goal start`.',
    },
  ],
  [
    'an invalid block is reported even with a model (the model only plans for no block)',
    facts({ issue: { plan: invalid, hasBlock: true }, hasPlanner: true }),
    {
      kind: 'rest',
      state: 'STOPPED',
      reason: 'invalid goal spec',
      comment: 'goal-loop cannot run the ```goal block of this issue:\n\n- tasks: required\n- objective: required\n\nEdit the issue and comment `/goal start`.',
    },
  ],
  ['a valid plan is stored before anything else', facts({ specStored: false, sandbox: undefined }), { kind: 'store-spec', spec }],
  ['a valid plan the model wrote is stored', facts({ issue: noBlock, hasPlanner: true, written: { ok: true, plan: { kind: 'spec', spec } }, specStored: false }), { kind: 'store-spec', spec }],
  [
    'require_plan_approval: the plan waits',
    facts({ config: { ok: true, config: strict } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('The plan', '2 tasks') },
  ],
  ['require_plan_approval, approved: runs', facts({ config: { ok: true, config: strict }, meta: { hasPlannedSpec: false, planApproved: true } }), { kind: 'run', config: strict, spec }],
  [
    'one task is "1 task"',
    facts({ config: { ok: true, config: strict }, issue: { plan: { kind: 'spec', spec: one }, hasBlock: true } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('The plan', '1 task') },
  ],
  [
    'a plan the model wrote this turn always waits, even if an earlier one was approved',
    facts({ issue: noBlock, hasPlanner: true, written: { ok: true, plan: { kind: 'spec', spec } }, meta: { hasPlannedSpec: false, planApproved: true } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('Claude wrote a plan', '2 tasks') },
  ],
  [
    'a plan the model wrote earlier waits until approved',
    facts({ issue: modelPlanEarlier, meta: { hasPlannedSpec: true } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('Claude wrote a plan', '2 tasks') },
  ],
  ['a plan the model wrote earlier, approved: runs', facts({ issue: modelPlanEarlier, meta: { hasPlannedSpec: true, planApproved: true } }), { kind: 'run', config, spec }],
  ['a goal block wins over an earlier model plan: no approval needed', facts({ meta: { hasPlannedSpec: true } }), { kind: 'run', config, spec }],
  ['/goal plan on a plan nobody must approve: waits silently', facts({ mode: 'plan' }), { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval' }],
  [
    '/goal plan after a plan was un-approved: says so',
    facts({ mode: 'plan', meta: { hasPlannedSpec: false, planApproved: false } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('The plan', '2 tasks') },
  ],
  [
    '/goal plan with require_plan_approval, even approved: waits and says so',
    facts({ mode: 'plan', config: { ok: true, config: strict }, meta: { hasPlannedSpec: false, planApproved: true } }),
    { kind: 'rest', state: 'AWAITING_APPROVAL', reason: 'the plan waits for approval', comment: APPROVE('The plan', '2 tasks') },
  ],
  ['a runnable plan asks for a sandbox', facts({ sandbox: undefined }), { kind: 'open-sandbox', config }],
  [
    'no sandbox on this host: stopped, with why',
    facts({ sandbox: { ok: false, message: 'bwrap: no user namespaces' } }),
    { kind: 'rest', state: 'STOPPED', reason: 'no sandbox on this host', comment: "goal-loop will not run this repository's commands without a sandbox:\n\n```text\nbwrap: no user namespaces\n```" },
  ],
  ['everything in place: run the loop', facts(), { kind: 'run', config, spec }],
];

describe('decideTurn', () => {
  it.each(table)('%s', (_name, input, expected) => {
    expect(decideTurn(input)).toEqual(expected);
  });

  it("an invalid spec's errors and a planner's message are untrusted: inert, each bounded, and bounded in number", () => {
    const evil = '@octocat [x](https://evil) ![i](https://evil/i.png) Fixes #1 <!-- goal-loop:effect 7.1 -->';
    const many: IssuePlan = { kind: 'invalid', errors: [...Array.from({ length: 25 }, () => `(root): unknown key "${evil}"`), `x: ${'y'.repeat(5000)}`] };
    const step = decideTurn(facts({ issue: { plan: many, hasBlock: true } }));
    const comment = step.kind === 'rest' ? step.comment! : '';
    expect(comment.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(21);
    expect(comment).toContain('- … and 6 more');
    expect(liveReferences(comment)).toEqual([]);
    expect(comment).not.toContain('<!--');
    expect(Buffer.byteLength(comment)).toBeLessThan(20_000);
    const planner = decideTurn(facts({ issue: noBlock, hasPlanner: true, written: { ok: false, message: `the plan is invalid:\n${evil}\n${'z'.repeat(5000)}` } }));
    const said = planner.kind === 'rest' ? planner.comment! : '';
    expect(liveReferences(said)).toEqual([]);
    expect(said).not.toContain('<!--');
    expect(said.length).toBeLessThan(1000);
  });

  it('walks a new goal with a goal block from start to run, one fact at a time', () => {
    const f: TurnFacts = { mode: 'run', state: 'INITIALIZING', config: { ok: true, config }, meta: { hasPlannedSpec: false }, hasPlanner: true };
    const steps: string[] = [];
    while (true) {
      const step = decideTurn(f);
      steps.push(step.kind);
      if (step.kind === 'read-plan') f.issue = block;
      else if (step.kind === 'store-spec') f.specStored = true;
      else if (step.kind === 'open-sandbox') f.sandbox = { ok: true };
      else break;
    }
    expect(steps).toEqual(['read-plan', 'store-spec', 'open-sandbox', 'run']);
  });
});
