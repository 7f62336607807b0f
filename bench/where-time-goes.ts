import { performance } from 'node:perf_hooks';
import { Git } from '../src/workspace/git.js';
import { ms } from './stats.js';

/**
 * Where a goal's milliseconds go, by port call and by git command: the ports (workspace,
 * sandbox, ledger) wrapped in a timing decorator, and the host's git processes timed at their one
 * entry point (Git.prototype.run). Time spent inside a call counts once per call, nested calls
 * included (a checkpoint's git commands are in both `workspace.checkpoint` and `git …`).
 */
export class TimeSpent {
  private readonly spans = new Map<string, number[]>();
  private restoreGit: (() => void) | undefined;

  /** `target` with every method that returns a promise timed under `<label>.<method>`. */
  wrap<T extends object>(target: T, label: string): T {
    const record = (name: string, t0: number) => this.add(`${label}.${name}`, performance.now() - t0);
    return new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver);
        if (typeof value !== 'function' || typeof prop !== 'string') return value;
        return function (this: unknown, ...args: unknown[]) {
          const t0 = performance.now();
          const out = value.apply(this === receiver ? obj : this, args);
          if (out instanceof Promise) return out.finally(() => record(prop, t0));
          return out;
        };
      },
    });
  }

  /** Times every host git command (by its subcommand) until `stop`. */
  timeGit(): void {
    const original = Git.prototype.run;
    const spent = this;
    Git.prototype.run = async function (this: Git, cwd: string, args: string[], input?: string) {
      const t0 = performance.now();
      try {
        return await original.call(this, cwd, args, input);
      } finally {
        spent.add(`git ${args.find((a) => !a.startsWith('-') && !a.includes('=')) ?? '?'}`, performance.now() - t0);
      }
    };
    this.restoreGit = () => {
      Git.prototype.run = original;
    };
  }

  stop(): void {
    this.restoreGit?.();
    this.restoreGit = undefined;
  }

  add(name: string, durationMs: number): void {
    const list = this.spans.get(name) ?? [];
    list.push(durationMs);
    this.spans.set(name, list);
  }

  /** One line per name, largest total first: total per task, calls per task, mean per call. */
  report(tasks: number, top = 14): string {
    const rows = [...this.spans]
      .map(([name, d]) => ({ name, total: d.reduce((a, b) => a + b, 0), calls: d.length }))
      .sort((a, b) => b.total - a.total)
      .slice(0, top);
    const width = Math.max(...rows.map((r) => r.name.length), 10);
    return rows.map((r) => `    ${r.name.padEnd(width)}  ${ms(r.total / tasks).padStart(9)} per task  (${(r.calls / tasks).toFixed(1)} calls, ${ms(r.total / r.calls)} each)`).join('\n');
  }
}
