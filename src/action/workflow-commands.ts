import type { CheckAnnotation } from '../steering/report/annotations.js';

/**
 * Workflow commands (`::name key=value,…::data`), the lines a step prints for the runner to act on.
 * Paths and messages here come from untrusted command output: escaped as @actions/core escapes
 * them (toolkit packages/core/src/command.ts), no line break survives, so what we print is always
 * exactly one command and the text inside it can never start another (`::add-mask::`,
 * `::stop-commands::`, …). Written by hand: one function each, not worth a dependency.
 */

/** The title every verification annotation carries. */
export const ANNOTATION_TITLE = 'goal-loop: verification failed';
/** GitHub shows at most this many error annotations per step. */
export const ERROR_ANNOTATIONS_PER_STEP = 10;

/** A command's data (after the second `::`): `%` first, so a literal `%0A` stays literal. */
export function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A property's value: as data, and `:` and `,`, which would end the property or the property list. */
export function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

function command(name: string, properties: ReadonlyArray<readonly [string, string]>, data: string): string {
  const props = properties.map(([k, v]) => `${k}=${escapeProperty(v)}`).join(',');
  return `::${name}${props ? ` ${props}` : ''}::${escapeData(data)}`;
}

/** A line or column worth showing: a positive whole number. */
function position(n: number | undefined): string | undefined {
  return n !== undefined && Number.isSafeInteger(n) && n >= 1 ? String(n) : undefined;
}

/** The check run's annotations as `::error` lines, the first `max` of them (GitHub shows no more per step). */
export function annotationCommands(annotations: readonly CheckAnnotation[], max = ERROR_ANNOTATIONS_PER_STEP): string[] {
  return annotations.slice(0, Math.max(0, max)).map((a) => {
    const line = position(a.start_line);
    const endLine = a.end_line !== a.start_line ? position(a.end_line) : undefined;
    const col = position(a.start_column);
    const endColumn = a.end_column !== a.start_column ? position(a.end_column) : undefined;
    const props: Array<readonly [string, string | undefined]> = [
      ['file', a.path],
      ['line', line],
      ['endLine', line && endLine],
      ['col', line && col],
      ['endColumn', line && col && endColumn],
      ['title', ANNOTATION_TITLE],
    ];
    return command(
      'error',
      props.filter((p): p is readonly [string, string] => p[1] !== undefined && p[1] !== ''),
      a.message,
    );
  });
}

/** `::add-mask::` for a secret, so the runner hides it in every later line of the log. */
export function maskCommand(secret: string): string {
  return command('add-mask', [], secret);
}
