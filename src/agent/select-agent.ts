import type { TaskAgent } from '../ports/agent.js';
import { UsageError } from '../cli/errors.js';

export type AgentChoice = 'auto' | 'scripted' | 'claude';

/**
 * `scripted`: only the tasks' deterministic `run` steps. `claude`: the Claude agent.
 * `auto`: Claude when ANTHROPIC_API_KEY is set, else scripted.
 */
export function selectAgent(choice: AgentChoice, env: NodeJS.ProcessEnv = process.env): TaskAgent | undefined {
  if (choice === 'scripted' || (choice === 'auto' && !env.ANTHROPIC_API_KEY)) return undefined;
  throw new UsageError('the Claude agent is not part of this build yet; use --agent scripted (run steps only)');
}
