import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { parseRepoConfig } from '../src/config/repo-config.js';
import { validateGoalSpec } from '../src/goal/parse.js';
import { SqliteLedger } from '../src/ledger/sqlite/sqlite-ledger.js';
import type { Workspace } from '../src/ports/workspace.js';
import { runConfiguredGoal } from '../src/run/run-configured-goal.js';
import { ProcessSandbox } from '../src/sandbox/process-sandbox.js';
import { GitWorkspace } from '../src/workspace/git-workspace.js';
import { makeBareRepo } from './bench-repo.js';
import { QuietForge } from './quiet-forge.js';
import type { Verdict } from './stats.js';

const TASKS = 10;
const PUSH_DELAY_S = 0.5;

/**
 * A goal of 10 tasks against a remote that takes 500 ms per push (a local bare repository whose
 * pre-receive hook sleeps): checkpoints pushed from the outbox while the next task runs, against
 * the same goal pushing each checkpoint before the next task starts (the workspace without
 * `commit`/`publish`, as before).
 */
export async function pushDelay(): Promise<Verdict[]> {
  const root = mkdtempSync(join(tmpdir(), 'goal-loop-bench-push-'));
  try {
    process.stdout.write(`checkpoint pushes: ${TASKS} tasks, a remote that takes ${PUSH_DELAY_S * 1000} ms per push\n`);
    const sync = await goalSeconds(root, 'sync');
    const outbox = await goalSeconds(root, 'outbox');
    const ratio = sync / outbox;
    process.stdout.write(
      `  pushed before the next task   ${sync.toFixed(2)} s\n` +
        `  pushed from the outbox        ${outbox.toFixed(2)} s  (the next task runs meanwhile; queued checkpoints go in one push)\n` +
        `  ratio                         ${ratio.toFixed(2)}x\n`,
    );
    return [{ name: 'pushes off the critical path', pass: ratio >= 2, detail: `${ratio.toFixed(2)}x faster end to end with a 500 ms push (target >= 2x)` }];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function goalSeconds(root: string, mode: 'sync' | 'outbox'): Promise<number> {
  const dir = join(root, mode);
  const bare = makeBareRepo(dir, { 'README.md': 'bench\n' });
  writeFileSync(join(bare, 'hooks', 'pre-receive'), `#!/bin/sh\nsleep ${PUSH_DELAY_S}\n`);
  chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
  const spec = validateGoalSpec({
    goal_id: 'bench',
    objective: 'benchmark',
    tasks: Array.from({ length: TASKS }, (_, i) => ({
      id: `t${i}`,
      title: `change ${i}`,
      run: `echo "change ${i}" > f${i}.txt`,
      verification: `test -s f${i}.txt`,
      ...(i > 0 ? { dependencies: [`t${i - 1}`] } : {}),
    })),
  });
  const ledger = new SqliteLedger(join(dir, 'ledger.db'));
  const git = new GitWorkspace({ remote: bare, dir: join(dir, 'ws'), goalId: 'bench', branch: 'goal/bench', identity: { name: 'goal-loop', email: 'b@b' } });
  const workspace = mode === 'sync' ? withoutOutboxPushes(git) : git;
  const t0 = performance.now();
  const result = await runConfiguredGoal({
    repo: bare,
    spec,
    config: parseRepoConfig({ verification_baseline: 'off' }),
    ledger,
    workspace,
    sandbox: new ProcessSandbox(),
    forge: new QuietForge(),
    logger: pino({ level: 'silent' }),
  });
  const seconds = (performance.now() - t0) / 1000;
  await ledger.close();
  if (result.status !== 'LOOP_COMPLETE') throw new Error(`bench goal ended ${result.status}: ${result.stop_reason}`);
  return seconds;
}

/** The workspace as the loop saw it before pushes were outbox effects: `checkpoint` commits and pushes. */
function withoutOutboxPushes(ws: GitWorkspace): Workspace {
  return new Proxy(ws, {
    get(target, prop) {
      if (prop === 'commit' || prop === 'publish') return undefined;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
