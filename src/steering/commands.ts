import { code } from './report/inert.js';

/** `/goal …` commands, as typed in an issue or pull request comment. */
export type GoalCommand =
  | { name: 'start' }
  | { name: 'plan' }
  | { name: 'approve'; taskId?: string }
  | { name: 'pause' }
  | { name: 'resume' }
  | { name: 'stop' }
  | { name: 'retry'; taskId?: string }
  | { name: 'skip'; taskId: string }
  | { name: 'status' }
  | { name: 'budget'; usd: number }
  | { name: 'help' };

export type ParsedCommand = { ok: true; command: GoalCommand } | { ok: false; error: string };

export const GOAL_COMMAND_TABLE = `| command | what it does |
| --- | --- |
| \`/goal start\` | start the goal (same as adding the \`goal\` label) |
| \`/goal plan\` | (re)build the plan from the issue and show it |
| \`/goal approve [task]\` | approve the plan, or one risky task |
| \`/goal pause\` / \`/goal resume\` | pause now (the running attempt is rolled back); continue from the last checkpoint |
| \`/goal stop\` | stop the goal |
| \`/goal retry [task]\` | continue from the last checkpoint with fresh retries |
| \`/goal skip <task>\` | mark a task as skipped and go on |
| \`/goal status\` | refresh the status comment |
| \`/goal budget <usd>\` | set the goal's cost cap in US dollars |
| \`/goal help\` | this table |`;

const TASK_ID = /^[A-Za-z0-9._-]+$/;

/**
 * Finds the first `/goal` command in a comment: a line that starts with `/goal`, outside code
 * blocks and quotes (so quoting someone's command does not run it again).
 */
export function findCommand(body: string): ParsedCommand | undefined {
  // The open fence, as CommonMark closes it: only by a line of its character, at least as long, and nothing else.
  let fence: { char: string; length: number } | undefined;
  for (const raw of body.replace(/\r\n/g, '\n').split('\n')) {
    const line = raw.trim();
    const run = /^(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (run && run[0] === fence.char && run.length >= fence.length && line.length === run.length) fence = undefined;
      continue;
    }
    if (run) {
      fence = { char: run[0]!, length: run.length };
      continue;
    }
    if (line.startsWith('>')) continue;
    if (/^\/goal(\s|$)/.test(line)) return parseCommand(line);
  }
  return undefined;
}

/** One command line. An error echoes what was typed only as a code span: our reply mentions, links and references nothing. */
export function parseCommand(line: string): ParsedCommand {
  const [, name = '', ...args] = line.trim().split(/\s+/);
  const arg = args[0];
  const noArgs = (command: GoalCommand): ParsedCommand => (args.length === 0 ? { ok: true, command } : { ok: false, error: `\`/goal ${name}\` takes no arguments` });
  const optionalTask = (make: (taskId?: string) => GoalCommand): ParsedCommand => {
    if (args.length > 1) return { ok: false, error: `\`/goal ${name}\` takes at most one task id` };
    if (arg !== undefined && !TASK_ID.test(arg)) return { ok: false, error: `${code(arg, 64)} is not a task id` };
    return { ok: true, command: make(arg) };
  };
  switch (name.toLowerCase()) {
    case 'start':
      return noArgs({ name: 'start' });
    case 'plan':
      return noArgs({ name: 'plan' });
    case 'pause':
      return noArgs({ name: 'pause' });
    case 'resume':
      return noArgs({ name: 'resume' });
    case 'stop':
      return noArgs({ name: 'stop' });
    case 'status':
      return noArgs({ name: 'status' });
    case 'help':
    case '':
      return { ok: true, command: { name: 'help' } };
    case 'approve':
      return optionalTask((taskId) => (taskId ? { name: 'approve', taskId } : { name: 'approve' }));
    case 'retry':
      return optionalTask((taskId) => (taskId ? { name: 'retry', taskId } : { name: 'retry' }));
    case 'skip':
      if (args.length !== 1 || !TASK_ID.test(arg!)) return { ok: false, error: '`/goal skip` needs exactly one task id' };
      return { ok: true, command: { name: 'skip', taskId: arg! } };
    case 'budget': {
      const usd = Number((arg ?? '').replace(/^\$/, ''));
      if (args.length !== 1 || !Number.isFinite(usd) || usd < 0) return { ok: false, error: '`/goal budget` needs an amount in US dollars, e.g. `/goal budget 15`' };
      return { ok: true, command: { name: 'budget', usd } };
    }
    default:
      return { ok: false, error: `unknown command ${code(`/goal ${name}`, 64)}` };
  }
}
