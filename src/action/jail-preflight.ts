import { pino } from 'pino';
import { selectSandbox } from '../sandbox/select-sandbox.js';

/** The workflow step that lets bubblewrap create its namespaces on GitHub's Ubuntu 24.04 runners. */
export const APPARMOR_STEP = 'sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0';

export type JailPreflight = { ok: true; note?: string } | { ok: false; line: string };

export interface JailPreflightOptions {
  /** The action's `sandbox` input: `bwrap` unless `process` was chosen explicitly. */
  sandbox: 'bwrap' | 'process';
  /** Starts one jail, throwing why it cannot (default: the same test jail `serve` and `run` start). */
  probe?: () => Promise<void>;
}

/**
 * Before a run touches the goal: can this runner start the jail? When it cannot, one line says
 * why, naming the workflow step to add when AppArmor is the cause (Ubuntu 24.04). It never falls
 * back to running commands unjailed: only an explicit `sandbox: process` does that.
 */
export async function jailPreflight(opts: JailPreflightOptions): Promise<JailPreflight> {
  if (opts.sandbox === 'process') {
    return { ok: true, note: "sandbox: process was chosen: the repository's commands run unjailed on the runner, as the job's own user, with the network" };
  }
  try {
    await (opts.probe ?? startTestJail)();
    return { ok: true };
  } catch (err) {
    return { ok: false, line: failureLine((err as Error).message) };
  }
}

async function startTestJail(): Promise<void> {
  await selectSandbox({ mode: 'bwrap', logger: pino({ level: 'silent' }) });
}

/** selectSandbox's message (what failed, bwrap's words, the reason and fix) as one line, without its `sandbox: process` hint. */
function failureLine(message: string): string {
  if (/apparmor_restrict_unprivileged_userns/.test(message)) {
    return `the bwrap jail cannot start: AppArmor restricts unprivileged user namespaces on this runner (Ubuntu 24.04); add a step before goal-loop in the job: \`run: ${APPARMOR_STEP}\``;
  }
  const why = message
    .split('\n')
    .filter((l) => !/^To run repository commands WITHOUT isolation/.test(l))
    .join(' ')
    .replace(/^cannot run untrusted commands: /, '')
    .replace(/\s+/g, ' ')
    .trim();
  return `the bwrap jail cannot start: ${why || 'no reason given'}`;
}
