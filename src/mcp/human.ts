import type { Server } from '@modelcontextprotocol/sdk/server/index.js';

export type Confirmation = { ok: true } | { ok: false; reason: string };

/**
 * Asks the human at the MCP client to confirm an action the driving agent must not take on its
 * own (approving a risky task, loosening a budget, resuming after an escalation). Uses MCP
 * elicitation, which the client shows to the user, not to the model. A client without
 * elicitation cannot ask: the action is refused, with the way a human can do it instead.
 */
export async function confirmWithHuman(server: Server, message: string, otherwise: string): Promise<Confirmation> {
  if (!server.getClientCapabilities()?.elicitation) {
    return { ok: false, reason: `this needs a human's confirmation, and this MCP client cannot ask one (no elicitation support). ${otherwise}` };
  }
  try {
    const answer = await server.elicitInput({
      mode: 'form',
      message,
      requestedSchema: {
        type: 'object',
        properties: { confirm: { type: 'boolean', title: 'Allow', description: 'Allow this action' } },
        required: ['confirm'],
      },
    });
    if (answer.action === 'accept' && answer.content?.confirm === true) return { ok: true };
    return { ok: false, reason: `the human did not confirm (${answer.action === 'accept' ? 'answered no' : answer.action}). ${otherwise}` };
  } catch (err) {
    return { ok: false, reason: `could not ask the human: ${err instanceof Error ? err.message : String(err)}. ${otherwise}` };
  }
}
