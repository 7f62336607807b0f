import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { stringify } from 'yaml';
import type { GoalRecord, Ledger } from '../ports/ledger.js';
import { SessionError } from './goal-session.js';
import type { Sessions } from './sessions.js';
import { untrustedOutput } from './turns.js';

/**
 * The goal's ledger item and its spec as MCP resources: `goal://<goal_id>/ledger` (state,
 * counters, tasks, recent attempts and transitions, as JSON) and `goal://<goal_id>/spec` (YAML).
 */
export function registerGoalResources(server: McpServer, sessions: Sessions, ledger: Ledger): void {
  const list = (kind: 'ledger' | 'spec') => async () => ({
    resources: (await ledger.listGoals()).map((g) => ({
      uri: `goal://${g.goalId}/${kind}`,
      name: `${g.goalId} ${kind}`,
      mimeType: kind === 'ledger' ? 'application/json' : 'application/yaml',
    })),
  });

  server.registerResource(
    'goal-ledger',
    new ResourceTemplate('goal://{goal_id}/ledger', { list: list('ledger') }),
    { title: 'Goal ledger item', description: 'State, counters, tasks, recent attempts and transitions of a goal.', mimeType: 'application/json' },
    async (uri, { goal_id }) => {
      const goal = await findGoal(sessions, ledger, String(goal_id));
      const [tasks, attempts, events] = await Promise.all([ledger.listTasks(goal), ledger.listAttempts(goal), ledger.listEvents(goal)]);
      const { spec: _spec, ...record } = goal;
      const item = {
        ...record,
        tasks,
        attempts: attempts.slice(-30).map((a) => ({ ...a, output: untrustedOutput(a.output, 1500) })),
        events: events.slice(-60),
      };
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(item, null, 2) }] };
    },
  );

  server.registerResource(
    'goal-spec',
    new ResourceTemplate('goal://{goal_id}/spec', { list: list('spec') }),
    { title: 'Goal spec', description: 'The goal spec as it was given (objective, constraints, acceptance criteria, task graph).', mimeType: 'application/yaml' },
    async (uri, { goal_id }) => {
      const id = String(goal_id);
      const open = sessions.list().filter((s) => s.key.goalId === id).at(-1);
      const spec = open?.spec ?? (await findGoal(sessions, ledger, id)).spec;
      return { contents: [{ uri: uri.href, mimeType: 'application/yaml', text: stringify(spec) }] };
    },
  );
}

/** The goal a resource means: the open session's, else the most recently updated one in the ledger. */
async function findGoal(sessions: Sessions, ledger: Ledger, goalId: string): Promise<GoalRecord> {
  const open = sessions.list().filter((s) => s.key.goalId === goalId).at(-1);
  const goal = open ? await open.goal() : (await ledger.listGoals()).find((g) => g.goalId === goalId);
  if (!goal) throw new SessionError(`no goal "${goalId}" in the ledger`);
  return goal;
}
