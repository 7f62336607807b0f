import { join } from 'node:path';
import { inject } from 'vitest';

// A command started without GOAL_LOOP_DB keeps its ledger in the user's state directory, and
// without GOAL_LOOP_WORKSPACES its clones and caches in the user's cache directory: in the tests,
// the run's own (inherited by every CLI child), never the developer's.
process.env.XDG_STATE_HOME = join(inject('testRunDir'), 'xdg-state');
process.env.XDG_CACHE_HOME = join(inject('testRunDir'), 'xdg-cache');
