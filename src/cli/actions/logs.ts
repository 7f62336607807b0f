import { didYouMean } from '../../common/closest-word.js';
import { InputError } from '../../common/errors.js';
import { plainText, withoutEscapes } from '../../common/plain-text.js';
import { redactUrls } from '../../common/redact-urls.js';
import { RESTING_STATES } from '../../goal/states.js';
import { openStore } from '../../ledger/open-ledger.js';
import { FINAL_GATE_TASK, SETUP_TASK } from '../../loop/loop-model.js';
import type { AttemptLogFilter } from '../../ports/attempt-log.js';
import type { GoalKey, GoalLedger } from '../../ports/goal-ledger.js';
import { findGoal, requireLedger } from '../find-goal.js';
import { renderAttemptEntries } from '../render-attempts.js';

export interface LogsValues {
  repo?: string;
  task?: string;
  attempt?: number;
  follow?: boolean;
  json?: boolean;
}

/** How often --follow asks the ledger for new entries. */
const FOLLOW_POLL_MS = 400;

export async function logsCommand(goalId: string, values: LogsValues): Promise<number> {
  const filter: AttemptLogFilter = {
    ...(values.task !== undefined ? { taskId: values.task } : {}),
    ...(values.attempt !== undefined ? { attempt: values.attempt } : {}),
  };
  requireLedger(goalId);
  const store = await openStore();
  try {
    const key = await findGoal(store.ledger, goalId, values.repo);
    if (values.task !== undefined) await requireTask(store.ledger, key, values.task);
    const print = (text: string) => process.stdout.write(text);
    const header = { attempt: undefined as string | undefined };
    let afterSeq = 0;
    const drain = async () => {
      const entries = await store.ledger.listAttemptEntries(key, { ...filter, afterSeq });
      if (entries.length === 0) return;
      afterSeq = entries.at(-1)!.seq;
      print(values.json ? entries.map((e) => `${jsonLine(e)}\n`).join('') : renderAttemptEntries(entries, header));
    };
    await drain();
    if (!values.follow) {
      if (afterSeq === 0 && !values.json) print(`no attempts recorded for ${goalId}${values.task ? ` task ${values.task}` : ''}${values.attempt ? ` attempt ${values.attempt}` : ''} yet\n`);
      return 0;
    }
    // Until the goal rests: then one last read, for what its last step wrote.
    while (true) {
      const goal = await store.ledger.getGoal(key);
      await drain();
      if (!goal || RESTING_STATES.has(goal.state)) {
        if (!values.json && goal) print(`${goalId} is ${goal.state}${goal.stopReason ? `: ${redactUrls(goal.stopReason)}` : ''}\n`);
        return 0;
      }
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
    }
  } finally {
    await store.close();
  }
}

/**
 * One entry as a JSON line: its strings without terminal escape sequences (a colour code in a
 * command's output is noise to a reader of the data). JSON escapes C0 controls but prints C1
 * ones (U+0080–U+009F) raw, which some terminals obey: those left are escaped.
 */
function jsonLine(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? withoutEscapes(v) : v)).replace(/[\u0080-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Task ids named in a usage error: the rest are counted. */
const TASK_IDS_SHOWN = 20;

/** --task names a task of the goal (or its setup or final gate): a typo is a usage error, not an empty record. */
async function requireTask(ledger: GoalLedger, key: GoalKey, taskId: string): Promise<void> {
  const [goal, tasks] = await Promise.all([ledger.getGoal(key), ledger.listTasks(key)]);
  const ids = [...new Set([...(goal?.spec.tasks.map((t) => t.id) ?? []), ...tasks.map((t) => t.taskId), SETUP_TASK, FINAL_GATE_TASK])];
  if (ids.includes(taskId)) return;
  const shown = ids.slice(0, TASK_IDS_SHOWN).map(plainText).join(', ');
  const more = ids.length > TASK_IDS_SHOWN ? ` and ${ids.length - TASK_IDS_SHOWN} more` : '';
  const named = plainText(taskId).slice(0, 80);
  throw new InputError(`goal "${key.goalId}" has no task "${named}"${didYouMean(taskId, ids)}; its tasks: ${shown}${more}`);
}
