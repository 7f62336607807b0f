/**
 * Time that passes only when every task it runs is asleep: then it jumps to the earliest wake-up.
 * A wait of an hour costs nothing, and no assertion depends on how fast the machine is. `clock`
 * and `sleep` are what takeWrite takes; tasks started with `run` are the ones it waits for.
 */
export class VirtualTime {
  private active = 0;
  private readonly sleepers: Array<{ at: number; wake: () => void }> = [];

  constructor(public now: number) {}

  readonly clock = (): number => this.now;

  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper = {
        at: this.now + ms,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers.splice(this.sleepers.indexOf(sleeper), 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
      this.advance();
    });

  /** Runs the tasks at once; time passes when all of those still running sleep. */
  async run<T>(tasks: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
    this.active += tasks.length;
    return Promise.all(
      tasks.map(async (task) => {
        try {
          return await task();
        } finally {
          this.active--;
          this.advance();
        }
      }),
    );
  }

  private advance(): void {
    if (this.sleepers.length === 0 || this.sleepers.length < this.active) return;
    this.now = Math.max(this.now, Math.min(...this.sleepers.map((s) => s.at)));
    const due = this.sleepers.filter((s) => s.at <= this.now);
    for (const s of due) this.sleepers.splice(this.sleepers.indexOf(s), 1);
    for (const s of due) s.wake();
  }
}
