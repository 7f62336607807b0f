import { readFileSync } from 'node:fs';

/** One instruction of a Dockerfile, its continuation lines joined. */
export interface Instruction {
  keyword: string;
  /** The text after the keyword. */
  args: string;
  line: number;
}

export interface Stage {
  /** The `AS` name, if any. */
  name?: string;
  from: string;
  instructions: Instruction[];
}

/** The stages of a Dockerfile, enough of its syntax for ours: comments, `\` continuations, `FROM … AS`. */
export function parseDockerfile(path: string): Stage[] {
  const stages: Stage[] = [];
  let pending = '';
  let start = 0;
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((raw, i) => {
    if (!pending && /^\s*(#|$)/.test(raw)) return;
    if (pending && /^\s*#/.test(raw)) return; // a comment inside a continued instruction
    if (!pending) start = i + 1;
    const continued = /\\\s*$/.test(raw);
    pending += `${continued ? raw.replace(/\\\s*$/, '') : raw} `;
    if (continued) return;
    const text = pending.trim();
    pending = '';
    const m = /^(\S+)\s*(.*)$/.exec(text)!;
    const keyword = m[1]!.toUpperCase();
    const args = m[2]!.trim();
    if (keyword === 'FROM') {
      const from = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`Dockerfile:${start}: cannot read FROM ${args}`);
      stages.push({ from: from[1]!, ...(from[2] ? { name: from[2] } : {}), instructions: [] });
      return;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile:${start}: ${keyword} before FROM`);
    stage.instructions.push({ keyword, args, line: start });
  });
  return stages;
}

export interface Copy {
  /** A stage's name for `COPY --from=…`, else undefined (the build context). */
  from?: string;
  sources: string[];
  dest: string;
}

/** A COPY's sources and destination (shell form, or the JSON form). */
export function parseCopy(args: string): Copy {
  let rest = args;
  let from: string | undefined;
  while (true) {
    const flag = /^--([a-z-]+)=(\S+)\s+/.exec(rest);
    if (!flag) break;
    if (flag[1] === 'from') from = flag[2];
    else throw new Error(`COPY --${flag[1]} is not understood here`);
    rest = rest.slice(flag[0].length);
  }
  const words = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
  const dest = words.pop();
  if (!dest || words.length === 0) throw new Error(`COPY ${args}: no source or no destination`);
  return { ...(from ? { from } : {}), sources: words, dest };
}

/** An exec-form instruction (`ENTRYPOINT ["a", "b"]`) as its words. */
export function execForm(args: string): string[] {
  const words = JSON.parse(args) as unknown;
  if (!Array.isArray(words) || !words.every((w) => typeof w === 'string')) throw new Error(`not an exec form: ${args}`);
  return words;
}

/** `ENV A=1 B=2` (the `KEY=value` form, values without spaces or quotes). */
export function parseEnv(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const word of args.split(/\s+/)) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`ENV ${args}: only KEY=value is understood here`);
    out[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return out;
}
