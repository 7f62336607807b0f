import { describe, expect, it } from 'vitest';
import { ANNOTATION_TITLE, annotationCommands, ERROR_ANNOTATIONS_PER_STEP, escapeData, escapeProperty, maskCommand } from '../../src/action/workflow-commands.js';
import type { AttemptEntry } from '../../src/ports/attempt-log.js';
import type { CheckAnnotation } from '../../src/steering/report/annotations.js';
import { checkAnnotations } from '../../src/steering/report/check-run.js';
import { groupAttempts } from '../../src/steering/report/record.js';
import { snapshot } from '../steering/report/fixtures.js';

const NO_USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };

const annotation = (path: string, line: number, message: string, col?: number): CheckAnnotation => ({
  path,
  start_line: line,
  end_line: line,
  ...(col === undefined ? {} : { start_column: col, end_column: col }),
  annotation_level: 'failure',
  message,
});

interface Parsed {
  command: string;
  properties: Record<string, string>;
  data: string;
}

/**
 * The runner's reading of stdout (actions/runner ActionCommand.TryParseV2): each line, leading
 * whitespace trimmed, that starts with `::` is a command; its section ends at the next `::`, the
 * data is the rest; properties split on `,` and the first `=`, then unescaped.
 */
function runnerCommands(stdout: string): Parsed[] {
  const unescapeData = (s: string) => s.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');
  const unescapeProperty = (s: string) => s.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%3A/g, ':').replace(/%2C/g, ',').replace(/%25/g, '%');
  const out: Parsed[] = [];
  for (const raw of stdout.split(/\r\n|\r|\n/)) {
    const line = raw.trimStart();
    if (!line.startsWith('::')) continue;
    const end = line.indexOf('::', 2);
    if (end < 0) continue;
    const section = line.slice(2, end);
    const space = section.indexOf(' ');
    const command = space < 0 ? section : section.slice(0, space);
    const properties: Record<string, string> = {};
    if (space >= 0) {
      for (const pair of section.slice(space + 1).split(',')) {
        const eq = pair.indexOf('=');
        if (eq > 0) properties[pair.slice(0, eq)] = unescapeProperty(pair.slice(eq + 1));
      }
    }
    out.push({ command, properties, data: unescapeData(line.slice(end + 2)) });
  }
  return out;
}

const ATTACKS = ['\n::set-output name=x::y', '\r\n::add-mask::hunter2', '\n::stop-commands::pwned\n::warning::owned', '%0A::set-env name=A::b', '\r::error file=x::y', '\u2028::notice::z'];

describe('workflow commands', () => {
  it('an annotation becomes one ::error line with file, line, column and the title, escaped as the runner reads it', () => {
    expect(annotationCommands([annotation('src/a.ts', 12, 'error TS2322: bad', 5)])).toEqual(['::error file=src/a.ts,line=12,col=5,title=goal-loop%3A verification failed::error TS2322: bad']);
    expect(annotationCommands([annotation('src/b.ts', 3, 'x')])).toEqual(['::error file=src/b.ts,line=3,title=goal-loop%3A verification failed::x']);
    expect(runnerCommands(annotationCommands([annotation('src/a.ts', 12, 'm', 5)])[0]!)).toEqual([
      { command: 'error', properties: { file: 'src/a.ts', line: '12', col: '5', title: ANNOTATION_TITLE }, data: 'm' },
    ]);
  });

  it('a range keeps its end line and end column', () => {
    const a: CheckAnnotation = { path: 'a.ts', start_line: 2, end_line: 4, start_column: 1, end_column: 9, annotation_level: 'failure', message: 'm' };
    expect(annotationCommands([a])).toEqual(['::error file=a.ts,line=2,endLine=4,col=1,endColumn=9,title=goal-loop%3A verification failed::m']);
  });

  it('escapes data and properties exactly as @actions/core does: % first, then CR and LF; properties also : and ,', () => {
    expect(escapeData('50% done\r\nnext %0A')).toBe('50%25 done%0D%0Anext %250A');
    expect(escapeProperty('a:b,c%d\ne')).toBe('a%3Ab%2Cc%25d%0Ae');
    expect(escapeData('a:b,c')).toBe('a:b,c');
    const a = annotation('src/we,ird:name%.ts', 7, 'it failed: 100%\nreally, twice', 2);
    expect(annotationCommands([a])).toEqual(['::error file=src/we%2Cird%3Aname%25.ts,line=7,col=2,title=goal-loop%3A verification failed::it failed: 100%25%0Areally, twice']);
  });

  it.each(ATTACKS)('crafted text %j in a message or a path stays inside its one escaped annotation line', (attack) => {
    const crafted = [annotation(`src/a.ts${attack}`, 1, `boom${attack}`), annotation('src/b.ts', 2, `${attack}${attack}`, 3)];
    const lines = annotationCommands(crafted);
    expect(lines).toHaveLength(2);
    for (const l of lines) {
      expect(l).not.toMatch(/[\r\n]/);
      expect(l.startsWith('::error file=')).toBe(true);
    }
    // What the runner reads: exactly the two annotations, their text as it was, nothing else.
    const parsed = runnerCommands(lines.join('\n'));
    expect(parsed.map((p) => p.command)).toEqual(['error', 'error']);
    expect(parsed[0]!.properties.file).toBe(`src/a.ts${attack}`);
    expect(parsed[0]!.data).toBe(`boom${attack}`);
    expect(parsed[1]!.data).toBe(`${attack}${attack}`);
    expect(parsed[1]!.properties).toEqual({ file: 'src/b.ts', line: '2', col: '3', title: ANNOTATION_TITLE });
  });

  it('a verification output that tries to issue commands only yields the annotations the check run has', () => {
    const tail = ['src/ui.ts(3,1): error TS2322: bad ::set-output name=x::y', '::add-mask::hunter2', '::stop-commands::pwned', 'src/ui.ts(4,2): error TS1: x\r::warning::owned'].join('\n');
    const entries: AttemptEntry[] = [
      { kind: 'verify', command: 'npx tsc', exitCode: 2, durationMs: 5, timedOut: false, passed: false, tail },
      { kind: 'end', outcome: 'failed', reason: 'verification failed', tokens: NO_USAGE, costUsd: 0, durationMs: 5 },
    ];
    const views = groupAttempts(entries.map((entry, i) => ({ seq: i + 1, at: '', taskId: 'ui', attempt: 1, entry })));
    const found = checkAnnotations(snapshot([{ id: 'ui', status: 'escalated', attempts: 1 }]), views);
    expect(found.map((a) => a.path)).toEqual(['src/ui.ts', 'src/ui.ts']);
    const lines = annotationCommands(found);
    const parsed = runnerCommands(lines.join('\n'));
    expect(parsed.map((p) => [p.command, p.properties.line])).toEqual([
      ['error', '3'],
      ['error', '4'],
    ]);
    expect(parsed.map((p) => p.data)).toEqual(found.map((a) => a.message));
    expect(parsed[0]!.data).toContain('::set-output name=x::y');
  });

  it(`keeps the first ${ERROR_ANNOTATIONS_PER_STEP} (GitHub shows no more per step), or the first max`, () => {
    const many = Array.from({ length: 25 }, (_, i) => annotation(`src/f${i}.ts`, i + 1, `e${i}`));
    const lines = annotationCommands(many);
    expect(lines).toHaveLength(10);
    expect(runnerCommands(lines.join('\n')).map((p) => p.properties.file)).toEqual(many.slice(0, 10).map((a) => a.path));
    expect(annotationCommands(many, 3).map((l) => runnerCommands(l)[0]!.data)).toEqual(['e0', 'e1', 'e2']);
    expect(annotationCommands(many, 0)).toEqual([]);
    expect(annotationCommands([])).toEqual([]);
  });

  it('a line or column that is no positive whole number is left out', () => {
    const bad: CheckAnnotation = { path: 'a.ts', start_line: 0, end_line: Number.NaN, start_column: -1, end_column: 1.5, annotation_level: 'failure', message: 'm' };
    expect(annotationCommands([bad])).toEqual(['::error file=a.ts,title=goal-loop%3A verification failed::m']);
  });

  it('maskCommand: one ::add-mask:: line for the whole secret, escaped', () => {
    expect(maskCommand('ghs_abc123')).toBe('::add-mask::ghs_abc123');
    const secret = 'a%b\n::set-output name=x::y\rc';
    const line = maskCommand(secret);
    expect(line).toBe('::add-mask::a%25b%0A::set-output name=x::y%0Dc');
    expect(runnerCommands(line)).toEqual([{ command: 'add-mask', properties: {}, data: secret }]);
  });
});
