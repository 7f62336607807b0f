import { unlinked } from '../common/inert-text.js';
import { plainText } from '../common/plain-text.js';
import { headChars, sanitizeCode } from '../common/untrusted.js';
import { executionOrder } from './dag.js';
import type { TaskStatus } from './states.js';

interface RenderTask {
  id: string;
  title: string;
  dependencies: string[];
  status?: TaskStatus;
}

const STATUS_CLASS: Record<TaskStatus, string> = {
  pending: 'pending',
  running: 'running',
  done: 'done',
  skipped: 'skipped',
  escalated: 'escalated',
  awaiting_approval: 'approval',
};

/** A mermaid flowchart of the task graph; with statuses, nodes are coloured by state. `titles: false` labels nodes with ids alone. */
export function mermaidGraph(tasks: readonly RenderTask[], opts: { titles?: boolean } = {}): string {
  const node = new Map(tasks.map((t, i) => [t.id, `t${i}`]));
  const lines = ['graph TD'];
  for (const t of tasks) lines.push(`  ${node.get(t.id)}["${mermaidText(opts.titles === false ? t.id : `${t.id}: ${t.title}`)}"]`);
  for (const t of tasks) for (const d of t.dependencies) if (node.has(d)) lines.push(`  ${node.get(d)} --> ${node.get(t.id)}`);
  if (tasks.some((t) => t.status)) {
    lines.push(
      '  classDef pending fill:#f6f8fa,stroke:#8c959f,color:#24292f',
      '  classDef running fill:#ddf4ff,stroke:#0969da,color:#0a3069',
      '  classDef done fill:#dafbe1,stroke:#1a7f37,color:#116329',
      '  classDef skipped fill:#eaeef2,stroke:#6e7781,color:#57606a',
      '  classDef escalated fill:#ffebe9,stroke:#cf222e,color:#82071e',
      '  classDef approval fill:#fff8c5,stroke:#9a6700,color:#4d2d00',
    );
    for (const t of tasks) if (t.status) lines.push(`  class ${node.get(t.id)} ${STATUS_CLASS[t.status]}`);
  }
  return lines.join('\n');
}

/** The tasks in the order the loop will take them, one numbered line each. */
export function orderedChecklist(tasks: readonly RenderTask[]): string {
  return executionOrder(tasks)
    .map((t, i) => `${i + 1}. ${t.id}  ${oneLine(t.title)}${t.dependencies.length > 0 ? `  (after ${t.dependencies.join(', ')})` : ''}`)
    .join('\n');
}

/** Room for a label before its entities: a node stays readable, the graph bounded. */
export const MERMAID_LABEL_MAX = 100;

/**
 * Untrusted titles must not break out of a mermaid label, nor reference, link or mention
 * anything: `#` and `@` become mermaid's entity codes (`#35;`, `#64;`, shown as `#` and `@`), so
 * no `#12` is left and no entity the title spells (`#lt;`) is read; hidden characters out.
 */
function mermaidText(text: string): string {
  const one = oneLine(sanitizeCode(plainText(text)));
  const cut = one.length > MERMAID_LABEL_MAX ? `${headChars(one, MERMAID_LABEL_MAX - 1)}…` : one;
  return unlinked(cut)
    .replace(/#/g, '#35;')
    .replace(/@/g, '#64;')
    .replace(/"/g, '#quot;')
    .replace(/[<>]/g, (c) => (c === '<' ? '#lt;' : '#gt;'))
    .replace(/[[\]{}()|`]/g, ' ');
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
