import type { AgentInput, AgentOutcome, TaskAgent } from '../../src/ports/agent.js';

const NO_USAGE = { input: 0, output: 0, cache_read: 0, cache_write: 0 };

// biome-ignore lint/suspicious/noConfusingVoidType: a script step may be a bare callback that returns nothing
export type AgentStep = (input: AgentInput) => Promise<Partial<AgentOutcome> | void> | Partial<AgentOutcome> | void;

/** A TaskAgent that plays a script per call and records every input it was given. */
export class ScriptedAgent implements TaskAgent {
  readonly name = 'scripted-test-agent';
  readonly calls: AgentInput[] = [];

  constructor(private readonly step: AgentStep) {}

  async work(input: AgentInput): Promise<AgentOutcome> {
    this.calls.push(input);
    const out = (await this.step(input)) ?? {};
    return { ok: true, usage: NO_USAGE, costUsd: 0, ...out } as AgentOutcome;
  }
}
