import { join } from 'node:path';
import { inject } from 'vitest';

// A command started without GOAL_LOOP_DB keeps its ledger in the user's state directory: in the
// tests, one of the run's own (inherited by every CLI child), never the developer's.
process.env.XDG_STATE_HOME = join(inject('testRunDir'), 'xdg-state');
