import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveGoalId, extractGoalBlock, formatSpecError, loadGoalSpecFile, parseGoalSpec, SpecValidationError, validateGoalSpec } from '../../src/goal/parse.js';
import { rawSpec, rawTask, seedGoalJson } from '../helpers/spec-builders.js';

/** The error a spec raises, or a test failure if it parses. */
function specError(fn: () => unknown): SpecValidationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SpecValidationError);
    return err as SpecValidationError;
  }
  throw new Error('expected the spec to be rejected, but it parsed');
}

/** The formatted error lines, as a user sees them. */
function lines(fn: () => unknown): string[] {
  return specError(fn).errors.map(formatSpecError);
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** The YAML example of DESIGN.md section 2, verbatim (from the excerpt copied into test/fixtures/design). */
function designYamlExample(): string {
  const design = readFileSync(new URL('../fixtures/design/goal-spec-section.md', import.meta.url), 'utf8');
  const section = design.slice(design.indexOf('## 2. Goal spec'));
  const m = /```yaml\n([\s\S]*?)\n```/.exec(section);
  if (!m?.[1]) throw new Error('no yaml example in the DESIGN.md section 2 excerpt');
  return m[1];
}

describe('the seed example', () => {
  const text = seedGoalJson();
  const original = JSON.parse(text) as {
    goal_id: string;
    objective: string;
    acceptance_criteria: string[];
    tasks: Array<{ id: string; title: string; dependencies: string[]; mcp_tools: string[]; verification: string }>;
  };

  it('is the auth-migration example with five tasks (sanity check of the extraction)', () => {
    expect(original.goal_id).toBe('goal-auth-migration-8841');
    expect(original.tasks).toHaveLength(5);
  });

  it('parses unchanged from its JSON text', () => {
    const spec = parseGoalSpec(text, { source: 'seeds/000.json' });
    expect(spec.goal_id).toBe('goal-auth-migration-8841');
    expect(spec.objective).toBe(original.objective);
    expect(spec.acceptance_criteria.map((c) => c.description)).toEqual(original.acceptance_criteria);
    expect(spec.acceptance_criteria.every((c) => c.check === undefined)).toBe(true);
    expect(spec.tasks.map((t) => t.id)).toEqual(['task-01', 'task-02', 'task-03', 'task-04', 'task-05']);
    for (const [i, t] of spec.tasks.entries()) {
      const o = original.tasks[i]!;
      expect(t.title).toBe(o.title);
      expect(t.dependencies).toEqual(o.dependencies);
      expect(t.mcp_tools).toEqual(o.mcp_tools);
      expect(t.verification).toBe(o.verification);
    }
  });

  it('gets the documented defaults for what it leaves out', () => {
    const spec = parseGoalSpec(text);
    expect(spec.constraints).toEqual([]);
    expect(spec.limits).toBeUndefined();
    for (const t of spec.tasks) {
      expect(t.run).toEqual([]);
      expect(t.risk).toBe('low');
      expect(t.requires_approval).toBe(false);
      expect(t.max_retries).toBeUndefined();
    }
  });

  it('keeps the verification command with embedded quotes byte for byte', () => {
    const spec = parseGoalSpec(text);
    expect(spec.tasks[1]!.verification).toBe(`node -e 'require("lucia")' returns 0`);
  });

  it('validates as an object too (the planner path), and from a ```goal block in an issue', () => {
    expect(validateGoalSpec(JSON.parse(text)).goal_id).toBe('goal-auth-migration-8841');
    const issue = `Please migrate auth.\n\n\`\`\`goal\n${text}\n\`\`\`\n\nThanks!`;
    const spec = parseGoalSpec(issue, { source: 'issue-7.md' });
    expect(spec.goal_id).toBe('goal-auth-migration-8841');
    expect(spec.tasks).toHaveLength(5);
  });
});

describe('formats', () => {
  it('reads JSON', () => {
    const spec = parseGoalSpec(json(rawSpec([rawTask('a'), rawTask('b', ['a'])], { goal_id: 'json-goal' })));
    expect(spec.goal_id).toBe('json-goal');
    expect(spec.tasks.map((t) => [t.id, t.dependencies])).toEqual([
      ['a', []],
      ['b', ['a']],
    ]);
  });

  it('reads the YAML example of DESIGN.md section 2, comments and all', () => {
    const spec = parseGoalSpec(designYamlExample(), { source: 'design.yml' });
    expect(spec.goal_id).toBe('auth-migration');
    expect(spec.constraints).toEqual(['Do not edit files under migrations/']);
    expect(spec.acceptance_criteria).toEqual([{ description: 'Build has zero TypeScript diagnostics', check: 'npm run build' }]);
    const [t] = spec.tasks;
    expect(t).toMatchObject({
      id: 'task-01',
      title: 'Uninstall Passport',
      dependencies: [],
      mcp_tools: ['ripgrep_search', 'bash_execute'],
      run: ['npm uninstall passport passport-local'],
      verification: '! npm ls passport',
      max_retries: 3,
      risk: 'low',
      requires_approval: false,
    });
    expect(spec.limits).toEqual({ max_iterations: 25, cost_cap_usd: 5 });
  });

  it('reads YAML with flow sequences and block scalars', () => {
    const yaml = [
      'goal_id: yaml-goal',
      'objective: Do the thing',
      'tasks:',
      '  - id: first',
      '    title: First',
      '    run: echo one',
      '    verification: |',
      '      test -f one',
      '  - id: second',
      '    title: Second',
      '    dependencies: [first]',
      '    verification: test -f two',
      '    risk: high',
      '    requires_approval: true',
    ].join('\n');
    const spec = parseGoalSpec(yaml);
    expect(spec.tasks[0]!.run).toEqual(['echo one']);
    expect(spec.tasks[0]!.verification.trim()).toBe('test -f one');
    expect(spec.tasks[1]).toMatchObject({ dependencies: ['first'], risk: 'high', requires_approval: true });
  });

  it('reads the ```goal fenced block of a markdown issue, ignoring the other fences', () => {
    const md = [
      '# Add slugify',
      '',
      'Some context, and an unrelated snippet:',
      '',
      '```yaml',
      'objective: not this one',
      '```',
      '',
      '```goal',
      'goal_id: from-the-fence',
      'objective: Add slugify',
      'tasks:',
      '  - id: a',
      '    title: A',
      '    verification: "true"',
      '```',
      '',
      'More text after the block.',
    ].join('\n');
    const spec = parseGoalSpec(md, { source: 'issue.md' });
    expect(spec.goal_id).toBe('from-the-fence');
    expect(spec.objective).toBe('Add slugify');
  });

  it('accepts a ~~~goal fence, an info string after `goal`, and CRLF line endings', () => {
    const body = 'objective: X\ntasks:\n  - {id: a, title: A, verification: "true"}\n';
    expect(parseGoalSpec(`~~~goal\n${body}~~~\n`).objective).toBe('X');
    expect(parseGoalSpec(`\`\`\`goal title="plan"\n${body}\`\`\`\n`).objective).toBe('X');
    expect(parseGoalSpec(`intro\r\n\`\`\`goal\r\n${body.replace(/\n/g, '\r\n')}\`\`\`\r\n`).objective).toBe('X');
  });

  it('refuses a markdown file without a ```goal block, saying so', () => {
    const err = specError(() => parseGoalSpec('# Title\n\n```yaml\nobjective: x\n```\n', { source: 'issue.md' }));
    expect(err.message).toContain('issue.md');
    expect(err.errors.map(formatSpecError).join('\n')).toMatch(/no ```goal fenced block/);
  });
});

describe('extractGoalBlock', () => {
  it('returns the body of the first goal block', () => {
    expect(extractGoalBlock('a\n```goal\nx: 1\n```\n```goal\nx: 2\n```\n')).toBe('x: 1\n');
  });

  it('returns undefined without a goal block; other info strings are not goal blocks', () => {
    expect(extractGoalBlock('no fences here')).toBeUndefined();
    expect(extractGoalBlock('```yaml\nx: 1\n```\n')).toBeUndefined();
    expect(extractGoalBlock('```goals\nx: 1\n```\n')).toBeUndefined();
  });

  it('the info string must be `goal` itself, not a word that starts with it', () => {
    expect(extractGoalBlock('```goal-v2\nx: 1\n```\n')).toBeUndefined();
    expect(extractGoalBlock('```goal.old\nx: 1\n```\n')).toBeUndefined();
    expect(extractGoalBlock('```goal-v2\nx: 1\n```\n```goal\nx: 2\n```\n')).toBe('x: 2\n');
  });

  it('does not end the block at a fence of the other kind', () => {
    expect(extractGoalBlock('~~~goal\nx: 1\n```\ny: 2\n~~~\n')).toBe('x: 1\n```\ny: 2\n');
  });

  it('finds fences GitHub renders: longer fences, indented ones, and an info string with more words', () => {
    expect(extractGoalBlock('````goal\nx: 1\n```\ninner\n```\n````\n')).toBe('x: 1\n```\ninner\n```\n');
    expect(extractGoalBlock('- item\n\n   ```goal\n   x: 1\n   ```\n')).toBe('   x: 1\n');
    expect(extractGoalBlock('```goal yaml\nx: 1\n```\n')).toBe('x: 1\n');
    expect(parseGoalSpec('- item\n\n   ```goal\n   objective: o\n   tasks: [{id: a, title: t, verification: "true"}]\n   ```\n', { source: 'issue.md' }).objective).toBe('o');
  });

  it('says how to fix a task id that YAML read as a number', () => {
    expect(() => parseGoalSpec('objective: o\ntasks:\n  - {id: 01, title: t, verification: "true"}\n')).toThrow(/tasks\[0\]\.id: must be a string \(quote it in YAML/);
  });
});

describe('validation errors name the path and the task id', () => {
  it('unknown dependency: tasks[2].dependencies: unknown task "task-9"', () => {
    const spec = rawSpec([rawTask('task-01'), rawTask('task-02', ['task-01']), rawTask('task-03', ['task-02', 'task-9'])]);
    const out = lines(() => parseGoalSpec(json(spec)));
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^tasks\[2\]\.dependencies: unknown task "task-9"/);
    expect(out[0]).toContain('task-03');
  });

  it('duplicate ids, naming the id and both positions', () => {
    const out = lines(() => parseGoalSpec(json(rawSpec([rawTask('a'), rawTask('b'), rawTask('a')]))));
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^tasks\[2\]\.id: /);
    expect(out[0]).toContain('"a"');
    expect(out[0]).toContain('tasks[0]');
    expect(out[0]).toMatch(/duplicate/);
  });

  it('self-dependency', () => {
    const err = specError(() => parseGoalSpec(json(rawSpec([rawTask('a'), rawTask('b', ['b'])]))));
    expect(err.errors).toHaveLength(1);
    expect(err.errors[0]).toMatchObject({ path: 'tasks[1].dependencies', taskId: 'b' });
    expect(formatSpecError(err.errors[0]!)).toMatch(/itself/);
    expect(formatSpecError(err.errors[0]!)).toContain('"b"');
  });

  it('a dependency listed twice', () => {
    const out = lines(() => parseGoalSpec(json(rawSpec([rawTask('a'), rawTask('b', ['a', 'a'])]))));
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^tasks\[1\]\.dependencies: .*"a"/);
  });

  it('a two-task cycle: dependency cycle: a -> b -> a', () => {
    const out = lines(() => parseGoalSpec(json(rawSpec([rawTask('a', ['b']), rawTask('b', ['a'])]))));
    expect(out).toEqual(['dependency cycle: a -> b -> a']);
  });

  it('a longer cycle names every id on it, as a closed path, and only those', () => {
    const tasks = [rawTask('root'), rawTask('x', ['root', 'z']), rawTask('y', ['x']), rawTask('z', ['y']), rawTask('leaf', ['z'])];
    const out = lines(() => parseGoalSpec(json(rawSpec(tasks))));
    expect(out).toHaveLength(1);
    const m = /^dependency cycle: (.*)$/.exec(out[0]!);
    expect(m).not.toBeNull();
    const ids = m![1]!.split(' -> ');
    expect(ids).toHaveLength(4);
    expect(ids[0]).toBe(ids[3]);
    expect(new Set(ids)).toEqual(new Set(['x', 'y', 'z']));
    // Each step of the path is a real dependency edge (in one direction or the other).
    const deps = new Map(tasks.map((t) => [t.id, t.dependencies ?? []]));
    const forward = ids.slice(0, -1).every((id, i) => deps.get(id)!.includes(ids[i + 1]!));
    const backward = ids.slice(0, -1).every((id, i) => deps.get(ids[i + 1]!)!.includes(id));
    expect(forward || backward).toBe(true);
  });

  it('a missing verification names the path and the task', () => {
    const { verification: _, ...noVerification } = rawTask('build');
    const err = specError(() => parseGoalSpec(json(rawSpec([rawTask('a'), noVerification as never]))));
    expect(err.errors).toHaveLength(1);
    expect(err.errors[0]).toMatchObject({ path: 'tasks[1].verification', taskId: 'build' });
    expect(formatSpecError(err.errors[0]!)).toBe('tasks[1].verification: is required (task "build")');
  });

  it('a blank verification is rejected too', () => {
    const err = specError(() => parseGoalSpec(json(rawSpec([rawTask('a', [], { verification: '   ' })]))));
    expect(err.errors[0]).toMatchObject({ path: 'tasks[0].verification', taskId: 'a' });
  });

  it('unknown keys, at the root and in a task, are named, with the key a typo likely meant', () => {
    const spec = rawSpec([rawTask('a'), rawTask('b', [], { verfication: 'oops' })], { objectve: 'typo', colour: 'red' });
    const out = lines(() => parseGoalSpec(json(spec)));
    expect(out).toContainEqual('(root): unknown keys "objectve" (did you mean objective?), "colour"');
    expect(out).toContainEqual('tasks[1]: unknown key "verfication" (did you mean verification?) (task "b")');
  });

  it('a file that is no goal spec never has its content echoed (a mapping without objective or tasks)', () => {
    const shadow = 'root:*:20228:0:99999:7:::\ndaemon:$6$salt$hash:20228:0:99999:7:::\n';
    const err = specError(() => parseGoalSpec(shadow, { source: '/etc/shadow' }));
    expect(err.message).not.toContain('20228');
    expect(err.message).not.toContain('root:');
    expect(err.message).not.toContain('daemon');
    expect(err.message).toMatch(/not a goal spec/);
  });

  it('unknown keys are echoed at most 5, each cut short, control characters made visible', () => {
    const extra = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}-${'x'.repeat(200)}\u001b[31m`, 1]));
    const out = lines(() => parseGoalSpec(json(rawSpec([rawTask('a')], extra))));
    const line = out.find((l) => l.startsWith('(root): unknown keys'))!;
    expect(line.match(/"k\d+-/g)).toHaveLength(5);
    expect(line).toContain('and 45 more');
    expect(line).not.toContain('\u001b');
    expect(line.length).toBeLessThan(5 * 80 + 60);
  });

  it('a bad risk level or a task id with spaces names the task path', () => {
    const err = specError(() => parseGoalSpec(json(rawSpec([rawTask('a'), rawTask('b', [], { risk: 'extreme' })]))));
    expect(err.errors[0]).toMatchObject({ path: 'tasks[1].risk', taskId: 'b' });
    const err2 = specError(() => parseGoalSpec(json(rawSpec([rawTask('has space')]))));
    expect(err2.errors[0]!.path).toBe('tasks[0].id');
  });

  it('reports every problem of a spec at once', () => {
    const spec = rawSpec([rawTask('a', [], { risk: 'extreme' }), rawTask('b', [], { title: '' })], { surprise: true });
    const err = specError(() => parseGoalSpec(json(spec)));
    expect(err.errors.map((e) => e.path).sort()).toEqual(['(root)', 'tasks[0].risk', 'tasks[1].title']);
  });

  it('a spec needs an objective and at least one task', () => {
    expect(specError(() => parseGoalSpec(json({ tasks: [rawTask('a')] }))).errors.map((e) => e.path)).toEqual(['objective']);
    expect(specError(() => parseGoalSpec(json(rawSpec([])))).errors.map((e) => e.path)).toEqual(['tasks']);
  });

  it('an empty document is refused with a message, not a crash', () => {
    expect(lines(() => parseGoalSpec('  \n\n'))).toEqual([expect.stringMatching(/empty/)]);
  });

  it('the error message is one screen: the source and one line per problem, no stack trace', () => {
    const spec = rawSpec([rawTask('a', ['b']), rawTask('b', ['a']), rawTask('c', ['nope'])]);
    const err = specError(() => parseGoalSpec(json(spec), { source: 'goals/bad.json' }));
    const msgLines = err.message.split('\n');
    expect(msgLines[0]).toContain('goals/bad.json');
    expect(msgLines.slice(1)).toEqual(err.errors.map(formatSpecError));
    expect(err.message).not.toMatch(/\n\s+at /);
  });
});

describe('bad YAML', () => {
  it('names the line and column of a syntax error', () => {
    const yaml = ['objective: x', 'tasks:', '  - id: a', '    title: [unclosed', '    verification: "true"', ''].join('\n');
    const out = lines(() => parseGoalSpec(yaml, { source: 'bad.yml' }));
    expect(out.length).toBeGreaterThan(0);
    expect(out[0]).toMatch(/^line \d+, column \d+: /);
  });

  it('the line number points at the broken line', () => {
    const yaml = ['objective: x', 'tasks:', '  - id: a', '   title: misindented', '    verification: "true"'].join('\n');
    const err = specError(() => parseGoalSpec(yaml));
    const first = /^line (\d+), column \d+$/.exec(err.errors[0]!.path);
    expect(first).not.toBeNull();
    expect(Number(first![1])).toBeGreaterThanOrEqual(4);
    expect(Number(first![1])).toBeLessThanOrEqual(5);
  });

  it('duplicate keys are an error with a line number, not silently merged', () => {
    const out = lines(() => parseGoalSpec('objective: a\nobjective: b\ntasks: []\n'));
    expect(out[0]).toMatch(/^line 2, column \d+: /);
  });

  it('broken JSON is reported with a position too', () => {
    const out = lines(() => parseGoalSpec('{\n  "objective": "x",\n  "tasks": [\n'));
    expect(out[0]).toMatch(/^line \d+, column \d+: /);
  });

  it('a whole document that is not a mapping is refused at (root)', () => {
    expect(specError(() => parseGoalSpec('- just\n- a list\n')).errors[0]!.path).toBe('(root)');
  });
});

describe('goal id', () => {
  const body = json(rawSpec());

  it('is taken from the spec when given', () => {
    expect(parseGoalSpec(json(rawSpec([rawTask('a')], { goal_id: 'mine' })), { source: 'other.json', defaultGoalId: 'x' }).goal_id).toBe('mine');
  });

  it('must match [a-z0-9-]', () => {
    expect(specError(() => parseGoalSpec(json(rawSpec([rawTask('a')], { goal_id: 'Has_Caps' })))).errors[0]!.path).toBe('goal_id');
  });

  it('falls back to the caller default, then to the source file name', () => {
    expect(parseGoalSpec(body, { source: 'x.json', defaultGoalId: '42-fix-login' }).goal_id).toBe('42-fix-login');
    expect(parseGoalSpec(body, { source: '/some/dir/Fix Login Bug!.yml' }).goal_id).toBe('fix-login-bug');
  });

  it('deriveGoalId slugs a file name into [a-z0-9-]', () => {
    expect(deriveGoalId('Fix Login Bug!.yml')).toBe('fix-login-bug');
    expect(deriveGoalId('/a/b/auth_migration.v2.json')).toBe('auth-migration-v2');
    expect(deriveGoalId('---.yml')).toBe('goal');
    expect(deriveGoalId(`${'x'.repeat(100)}.yml`).length).toBeLessThanOrEqual(64);
    for (const name of ['Ünïcode Spaß.yaml', '  lead and trail  .md', 'a--b__c.yml', `${'ab-'.repeat(30)}.yml`]) {
      expect(deriveGoalId(name)).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    }
  });
});

describe('schema details', () => {
  it('run accepts one string or a list', () => {
    const spec = validateGoalSpec(rawSpec([rawTask('a', [], { run: 'make' }), rawTask('b', [], { run: ['make a', 'make b'] })]));
    expect(spec.tasks.map((t) => t.run)).toEqual([['make'], ['make a', 'make b']]);
  });

  it('an empty run step is refused and named', () => {
    const err = specError(() => validateGoalSpec(rawSpec([rawTask('a', [], { run: ['ok', ' '] })])));
    expect(err.errors[0]).toMatchObject({ path: 'tasks[0].run[1]', taskId: 'a' });
  });

  it('acceptance criteria are strings or {description, check}, normalised to objects', () => {
    const spec = validateGoalSpec(rawSpec([rawTask('a')], { acceptance_criteria: ['plain', { description: 'checked', check: 'npm test' }] }));
    expect(spec.acceptance_criteria).toEqual([{ description: 'plain' }, { description: 'checked', check: 'npm test' }]);
    const err = specError(() => validateGoalSpec(rawSpec([rawTask('a')], { acceptance_criteria: [{ description: 'x', chek: 'y' }] })));
    expect(err.errors.map(formatSpecError).join('\n')).toMatch(/acceptance_criteria\[0\]/);
  });

  it('limits override the config, and are checked', () => {
    expect(validateGoalSpec(rawSpec([rawTask('a')], { limits: { max_retries: 5, max_risk: 'medium' } })).limits).toEqual({
      max_retries: 5,
      max_risk: 'medium',
    });
    expect(specError(() => validateGoalSpec(rawSpec([rawTask('a')], { limits: { max_retries: 0 } }))).errors[0]!.path).toBe('limits.max_retries');
    expect(lines(() => validateGoalSpec(rawSpec([rawTask('a')], { limits: { max_retry: 2 } })))).toEqual(['limits: unknown key "max_retry" (did you mean max_retries?)']);
  });

  it('a task max_retries must be a positive integer', () => {
    for (const bad of [0, -1, 1.5, '3']) {
      const err = specError(() => validateGoalSpec(rawSpec([rawTask('a', [], { max_retries: bad })])));
      expect(err.errors[0]).toMatchObject({ path: 'tasks[0].max_retries', taskId: 'a' });
    }
  });

  it('graph errors are found on the planner path (validateGoalSpec) as well', () => {
    const err = specError(() => validateGoalSpec(rawSpec([rawTask('a', ['b']), rawTask('b', ['a'])]), { source: 'planner' }));
    expect(err.source).toBe('planner');
    expect(err.errors.map(formatSpecError)).toEqual(['dependency cycle: a -> b -> a']);
  });
});

describe('formatSpecError', () => {
  it('prefixes the path and appends the task id once', () => {
    expect(formatSpecError({ path: 'tasks[0].title', message: 'is required', taskId: 't1' })).toBe('tasks[0].title: is required (task "t1")');
    expect(formatSpecError({ path: 'tasks[1].id', message: 'duplicate task id "t1"', taskId: 't1' })).toBe('tasks[1].id: duplicate task id "t1"');
    expect(formatSpecError({ path: '', message: 'dependency cycle: a -> b -> a' })).toBe('dependency cycle: a -> b -> a');
  });
});

describe('loadGoalSpecFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'goal-parse-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a YAML file and derives the goal id from its name', async () => {
    const file = join(dir, 'Add Slugify.yml');
    writeFileSync(file, 'objective: Add slugify\ntasks:\n  - {id: a, title: A, verification: "true"}\n');
    const spec = await loadGoalSpecFile(file);
    expect(spec.goal_id).toBe('add-slugify');
  });

  it('reads a markdown issue file', async () => {
    const file = join(dir, 'issue-12.md');
    writeFileSync(file, 'Text\n\n```goal\nobjective: From md\ntasks:\n  - {id: a, title: A, verification: "true"}\n```\n');
    const spec = await loadGoalSpecFile(file);
    expect(spec.objective).toBe('From md');
    expect(spec.goal_id).toBe('issue-12');
  });

  it('a missing file is a SpecValidationError naming the file', async () => {
    const file = join(dir, 'nope.yml');
    const err = await loadGoalSpecFile(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SpecValidationError);
    expect((err as Error).message).toContain(file);
    expect((err as Error).message).toMatch(/not found/);
  });
});
