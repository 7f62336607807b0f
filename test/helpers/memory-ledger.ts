import type { GoalSpec } from '../../src/goal/schema.js';
import type { GoalState } from '../../src/goal/states.js';
import { trimForLedger } from '../../src/ledger/trim.js';
import type { AttemptEntry, AttemptLog, AttemptLogEntry, AttemptLogFilter } from '../../src/ports/attempt-log.js';
import type { AttemptRecord, ControlRequest, CounterDelta, Counters, EventRecord, GoalChange, GoalKey, GoalLedger, GoalRecord, TaskPatch, TaskRecord } from '../../src/ports/goal-ledger.js';
import type { EffectInput, GivenUpEffect, Outbox, PendingEffect } from '../../src/ports/outbox.js';

interface GoalEntry {
  id: number;
  record: Omit<GoalRecord, 'spec' | 'meta'> & { spec: string; meta: string };
  tasks: TaskRecord[];
  attempts: AttemptRecord[];
  events: EventRecord[];
}

interface EffectEntry {
  id: number;
  key: GoalKey;
  kind: string;
  payload: string;
  createdAt: number;
  attempts: number;
  lastError: string | null;
  claimedBy: string | null;
  claimedUntil: number;
  doneAt: number | null;
  givenUpAt: number | null;
}

/** What every connection to one in-memory ledger shares. */
class MemoryLedgerData {
  readonly goals = new Map<string, GoalEntry>();
  readonly effects: EffectEntry[] = [];
  readonly entries: Array<AttemptLogEntry & { goal: number }> = [];
  nextGoal = 1;
  nextEffect = 1;
  nextSeq = 1;
}

const nameOf = (key: GoalKey) => JSON.stringify([key.repo, key.goalId]);
const unknownGoal = (key: GoalKey) => new Error(`ledger: unknown goal ${key.goalId} in ${key.repo}`);
const copy = <T>(value: T): T => structuredClone(value);
const json = (value: unknown): string => JSON.stringify(value ?? null);

/**
 * The ledger concerns the loop uses (goals, the attempt record, the outbox), in memory, for the
 * fast test tier. It keeps the rules of the real ledgers (test/loop/memory-ledger.test.ts runs the
 * ledger contract on it): a change lands whole or not at all, long text keeps its head and tail,
 * an effect is claimed by one try at a time. `connect()` opens another connection to the same data.
 */
export class MemoryLedger implements GoalLedger, AttemptLog, Outbox {
  constructor(private readonly data = new MemoryLedgerData()) {}

  /** Another connection to the same ledger (another process's view). */
  connect(): MemoryLedger {
    return new MemoryLedger(this.data);
  }

  async upsertGoal(key: GoalKey, input: { spec: GoalSpec; branch: string; priority?: string }): Promise<GoalRecord> {
    const at = now();
    const existing = this.data.goals.get(nameOf(key));
    const entry: GoalEntry = existing ?? {
      id: this.data.nextGoal++,
      record: {
        ...key,
        objective: '',
        spec: '',
        state: 'INITIALIZING',
        stopReason: null,
        branch: '',
        priority: 'P2',
        counters: { iterations: 0, errors: 0, errors_recovered: 0, tokens: { input: 0, output: 0, cache_read: 0, cache_write: 0 }, cost_usd: 0 },
        control: null,
        meta: '{}',
        createdAt: at,
        updatedAt: at,
      },
      tasks: [],
      attempts: [],
      events: [],
    };
    Object.assign(entry.record, { objective: input.spec.objective, spec: json(input.spec), branch: input.branch, updatedAt: at });
    if (input.priority) entry.record.priority = input.priority;
    const known = new Map(entry.tasks.map((t) => [t.taskId, t]));
    entry.tasks = input.spec.tasks.map((t, position) => ({
      ...(known.get(t.id) ?? { taskId: t.id, status: 'pending', attempts: 0, checkpointSha: null, lastError: null, approved: false }),
      position,
      title: t.title,
    }));
    this.data.goals.set(nameOf(key), entry);
    return (await this.getGoal(key))!;
  }

  async getGoal(key: GoalKey): Promise<GoalRecord | undefined> {
    const entry = this.data.goals.get(nameOf(key));
    return entry && toRecord(entry);
  }

  async listGoals(filter: { exceptStates?: Iterable<GoalState> } = {}): Promise<GoalRecord[]> {
    const except = new Set(filter.exceptStates ?? []);
    return [...this.data.goals.values()]
      .filter((g) => !except.has(g.record.state))
      .sort((a, b) => b.record.updatedAt.localeCompare(a.record.updatedAt) || b.id - a.id)
      .map(toRecord);
  }

  async setState(key: GoalKey, state: GoalState, event: string, detail?: string | null, stopReason?: string | null): Promise<void> {
    await this.recordChange(key, { transitions: [{ to: state, event, detail: detail ?? null, ...(stopReason !== undefined ? { stopReason } : {}) }] });
  }

  async recordChange(key: GoalKey, change: GoalChange): Promise<void> {
    const at = now();
    // One transaction: the change is made on a copy, which replaces the goal only once all of it applied.
    const draft = copy(this.require(key));
    for (const t of change.transitions ?? []) {
      draft.events.push({ at, from: draft.record.state, to: t.to, event: t.event, detail: t.detail ?? null });
      draft.record.state = t.to;
      if (t.stopReason !== undefined) draft.record.stopReason = t.stopReason;
      draft.record.updatedAt = at;
    }
    for (const t of change.tasks ?? []) patchTask(draft, key, t.taskId, t.patch);
    if (change.counters) addTo(draft, change.counters, at);
    if (change.meta) mergeMeta(draft, change.meta, at);
    this.data.goals.set(nameOf(key), draft);
    for (const e of change.effects ?? []) this.insertEffect(key, e);
    for (const a of change.attempts ?? []) await this.recordAttempt(key, a);
    for (const e of change.attemptEntries ?? []) await this.appendAttemptEntry(key, e.taskId, e.attempt, e.entry);
  }

  async listTasks(key: GoalKey): Promise<TaskRecord[]> {
    return copy(this.require(key).tasks);
  }

  async updateTask(key: GoalKey, taskId: string, patch: TaskPatch): Promise<void> {
    patchTask(this.require(key), key, taskId, patch);
  }

  async recordAttempt(key: GoalKey, a: AttemptRecord): Promise<void> {
    const entry = this.require(key);
    entry.attempts.push({
      taskId: a.taskId,
      attempt: a.attempt,
      phase: a.phase,
      passed: a.passed,
      exitCode: a.exitCode,
      output: trimForLedger(a.output),
      ...(a.logPath ? { logPath: a.logPath } : {}),
      durationMs: a.durationMs,
    });
  }

  async listAttempts(key: GoalKey, taskId?: string): Promise<AttemptRecord[]> {
    return copy(this.require(key).attempts.filter((a) => taskId === undefined || a.taskId === taskId));
  }

  async appendAttemptEntry(key: GoalKey, taskId: string, attempt: number, entry: AttemptEntry): Promise<void> {
    const goal = this.require(key).id;
    this.data.entries.push({ goal, seq: this.data.nextSeq++, at: now(), taskId, attempt, entry: JSON.parse(json(entry)) as AttemptEntry });
  }

  async listAttemptEntries(key: GoalKey, filter: AttemptLogFilter = {}): Promise<AttemptLogEntry[]> {
    const goal = this.require(key).id;
    return this.data.entries
      .filter((e) => e.goal === goal && e.seq > (filter.afterSeq ?? 0))
      .filter((e) => (filter.taskId === undefined || e.taskId === filter.taskId) && (filter.attempt === undefined || e.attempt === filter.attempt))
      .map(({ goal: _goal, ...e }) => copy(e));
  }

  async listEvents(key: GoalKey): Promise<EventRecord[]> {
    return copy(this.require(key).events);
  }

  async addCounters(key: GoalKey, delta: CounterDelta): Promise<Counters> {
    const entry = this.require(key);
    addTo(entry, delta, now());
    return copy(entry.record.counters);
  }

  async setControl(key: GoalKey, control: ControlRequest | null): Promise<void> {
    const entry = this.require(key);
    entry.record.control = control;
    entry.record.updatedAt = now();
  }

  async setMeta(key: GoalKey, patch: Record<string, unknown>): Promise<Record<string, unknown>> {
    return mergeMeta(this.require(key), patch, now());
  }

  async updateMeta(key: GoalKey, update: (meta: Record<string, unknown>) => Record<string, unknown>): Promise<Record<string, unknown>> {
    const entry = this.require(key);
    return mergeMeta(entry, update(JSON.parse(entry.record.meta) as Record<string, unknown>), now());
  }

  async pendingEffects(filter: { key?: GoalKey; settledForMs?: number } = {}): Promise<PendingEffect[]> {
    const at = Date.now();
    return this.data.effects
      .filter((e) => e.doneAt === null && (!filter.key || nameOf(e.key) === nameOf(filter.key)))
      .filter((e) => filter.settledForMs === undefined || (e.claimedUntil <= at && e.createdAt <= at - filter.settledForMs))
      .map(toEffect);
  }

  async claimEffect(id: number, holder: string, ttlMs: number): Promise<number> {
    const at = Date.now();
    const e = this.data.effects.find((x) => x.id === id);
    if (!e || e.doneAt !== null || e.claimedUntil > at) return 0;
    Object.assign(e, { claimedBy: holder, claimedUntil: at + ttlMs, attempts: e.attempts + 1 });
    return e.attempts;
  }

  async renewEffectClaim(id: number, holder: string, ttlMs: number): Promise<boolean> {
    const e = this.held(id, holder);
    if (!e) return false;
    e.claimedUntil = Date.now() + ttlMs;
    return true;
  }

  async completeEffect(id: number): Promise<void> {
    const e = this.data.effects.find((x) => x.id === id);
    if (e) Object.assign(e, { doneAt: Date.now(), claimedUntil: 0 });
  }

  async failEffect(id: number, holder: string, error: string, retryInMs: number): Promise<void> {
    const e = this.held(id, holder);
    if (e) Object.assign(e, { lastError: trimForLedger(error), claimedUntil: Date.now() + retryInMs });
  }

  async giveUpEffect(id: number, holder: string, error: string): Promise<void> {
    const e = this.held(id, holder);
    const at = Date.now();
    if (e) Object.assign(e, { lastError: trimForLedger(error), doneAt: at, givenUpAt: at, claimedUntil: 0 });
  }

  async givenUpEffects(filter: { key?: GoalKey } = {}): Promise<GivenUpEffect[]> {
    return this.data.effects
      .filter((e) => e.givenUpAt !== null && (!filter.key || nameOf(e.key) === nameOf(filter.key)))
      .map((e) => ({ ...toEffect(e), givenUpAt: new Date(e.givenUpAt!).toISOString() }));
  }

  /** Drops done effects (not given-up ones) older than `handledDeliveriesMs`; no leases or inbox here. */
  async prune(opts: { expiredLeasesMs: number; handledDeliveriesMs: number }): Promise<{ leases: number; deliveries: number; effects: number }> {
    const before = Date.now() - opts.handledDeliveriesMs;
    const keep = this.data.effects.filter((e) => e.doneAt === null || e.givenUpAt !== null || e.doneAt >= before);
    const effects = this.data.effects.length - keep.length;
    this.data.effects.splice(0, this.data.effects.length, ...keep);
    return { leases: 0, deliveries: 0, effects };
  }

  async close(): Promise<void> {
    // nothing to release: the ledger lives in memory
  }

  private insertEffect(key: GoalKey, e: EffectInput): void {
    const effect = { id: this.data.nextEffect++, key: { ...key }, kind: e.kind, payload: json(e.payload), createdAt: Date.now(), attempts: 0, lastError: null };
    this.data.effects.push({ ...effect, claimedBy: null, claimedUntil: 0, doneAt: null, givenUpAt: null });
  }

  private held(id: number, holder: string): EffectEntry | undefined {
    return this.data.effects.find((x) => x.id === id && x.claimedBy === holder && x.doneAt === null);
  }

  private require(key: GoalKey): GoalEntry {
    const entry = this.data.goals.get(nameOf(key));
    if (!entry) throw unknownGoal(key);
    return entry;
  }
}

/** ISO time, strictly increasing, so that "most recently updated" has one answer. */
let lastNow = 0;
function now(): string {
  lastNow = Math.max(Date.now(), lastNow + 1);
  return new Date(lastNow).toISOString();
}

function toRecord(entry: GoalEntry): GoalRecord {
  const r = copy(entry.record);
  return { ...r, spec: JSON.parse(r.spec) as GoalSpec, meta: JSON.parse(r.meta) as Record<string, unknown> };
}

function toEffect(e: EffectEntry): PendingEffect {
  return { id: e.id, key: { ...e.key }, kind: e.kind, payload: JSON.parse(e.payload) as unknown, createdAt: new Date(e.createdAt).toISOString(), attempts: e.attempts, lastError: e.lastError };
}

function patchTask(entry: GoalEntry, key: GoalKey, taskId: string, patch: TaskPatch): void {
  const task = entry.tasks.find((t) => t.taskId === taskId);
  const fields = Object.entries(patch).filter(([k, v]) => v !== undefined && ['status', 'attempts', 'checkpointSha', 'lastError', 'approved'].includes(k));
  if (fields.length === 0) return;
  if (!task) throw new Error(`ledger: goal ${key.goalId} has no task "${taskId}"`);
  for (const [k, v] of fields) Object.assign(task, { [k]: k === 'lastError' && typeof v === 'string' ? trimForLedger(v) : v });
}

function addTo(entry: GoalEntry, d: CounterDelta, at: string): void {
  const c = entry.record.counters;
  c.iterations += d.iterations ?? 0;
  c.errors += d.errors ?? 0;
  c.errors_recovered += d.errors_recovered ?? 0;
  c.cost_usd += d.cost_usd ?? 0;
  for (const k of ['input', 'output', 'cache_read', 'cache_write'] as const) c.tokens[k] += d.tokens?.[k] ?? 0;
  entry.record.updatedAt = at;
}

function mergeMeta(entry: GoalEntry, patch: Record<string, unknown>, at: string): Record<string, unknown> {
  const meta = JSON.parse(entry.record.meta) as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined) delete meta[k];
    else meta[k] = v;
  }
  entry.record.meta = json(meta);
  entry.record.updatedAt = at;
  return JSON.parse(entry.record.meta) as Record<string, unknown>;
}
