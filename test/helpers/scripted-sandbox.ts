import type { CommandRequest, CommandResult, Sandbox } from '../../src/ports/sandbox.js';
import type { MemoryWorkspace } from './memory-workspace.js';

/** A command's answer given by a test: a partial result, `hang` (runs until stopped or timed out), or undefined (the words decide). */
export type SandboxStep = (request: CommandRequest) => Partial<CommandResult> | 'hang' | undefined | Promise<Partial<CommandResult> | 'hang' | undefined>;

/**
 * A Sandbox that starts no process, for the fast test tier. A command line is a few words joined
 * by ` && `, over the MemoryWorkspace at its cwd, after $GOAL_ID, $GOAL_TASK_ID and $GOAL_ATTEMPT
 * are put in: `true`, `false`, `echo TEXT`, `fail TEXT` (exit 1), `exit N [TEXT]`, `write PATH [TEXT]`,
 * `remove PATH`, `exists PATH`, `absent PATH`, `equals A B`, `hang` (until stopped or its timeout).
 * A word it does not know exits 127, as a shell would. `step` may answer a command first.
 */
export class ScriptedSandbox implements Sandbox {
  readonly kind = 'scripted';
  readonly calls: CommandRequest[] = [];

  constructor(
    private readonly workspaceAt: (cwd: string) => MemoryWorkspace | undefined,
    private readonly step?: SandboxStep,
  ) {}

  async run(request: CommandRequest): Promise<CommandResult> {
    this.calls.push(request);
    const answer = await Promise.resolve(this.step?.(request));
    if (answer === 'hang') return hang(request);
    if (answer) return result(answer);
    let output = '';
    for (const words of request.command.split(' && ')) {
      const [word = '', ...rest] = substitute(words, request.env ?? {})
        .trim()
        .split(/\s+/);
      if (word === 'hang') return hang(request, output);
      const { exitCode, text } = this.word(word, rest, request.cwd);
      output += text ? `${text}\n` : '';
      if (exitCode !== 0) return result({ exitCode, output });
    }
    return result({ exitCode: 0, output });
  }

  private word(word: string, args: string[], cwd: string): { exitCode: number; text?: string } {
    const files = this.workspaceAt(cwd)?.files;
    const [path = '', ...more] = args;
    switch (word) {
      case 'true':
        return { exitCode: 0 };
      case 'false':
        return { exitCode: 1 };
      case 'echo':
        return { exitCode: 0, text: args.join(' ') };
      case 'fail':
        return { exitCode: 1, text: args.join(' ') };
      case 'exit':
        return { exitCode: Number(path), text: more.join(' ') };
      case 'write':
        files?.set(path, more.length > 0 ? more.join(' ') : path);
        return { exitCode: 0 };
      case 'remove':
        files?.delete(path);
        return { exitCode: 0 };
      case 'exists':
        return files?.has(path) ? { exitCode: 0 } : { exitCode: 1, text: `${path} is missing` };
      case 'absent':
        return files?.has(path) ? { exitCode: 1, text: `${path} exists` } : { exitCode: 0 };
      case 'equals':
        return path === more[0] ? { exitCode: 0 } : { exitCode: 1, text: `${path} is not ${more[0]}` };
      default:
        return { exitCode: 127, text: `bash: ${word}: command not found` };
    }
  }
}

function substitute(command: string, env: Record<string, string>): string {
  return command.replace(/\$(GOAL_ID|GOAL_TASK_ID|GOAL_ATTEMPT)\b/g, (_, name: string) => env[name] ?? '');
}

function result(r: Partial<CommandResult>): CommandResult {
  const output = r.output ?? '';
  return { exitCode: 0, signal: null, timedOut: false, aborted: false, output, outputBytes: output.length, truncated: false, durationMs: 1, ...r };
}

/** A command that does not end by itself: it is stopped by the run's signal, or killed at its timeout. */
function hang(request: CommandRequest, output = ''): Promise<CommandResult> {
  return new Promise((resolve) => {
    const stop = (r: Partial<CommandResult>) => {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve(result({ exitCode: null, output, ...r }));
    };
    const onAbort = () => stop({ signal: 'SIGTERM', aborted: true });
    const timer = setTimeout(() => stop({ signal: 'SIGKILL', timedOut: true }), request.timeoutMs);
    if (request.signal?.aborted) return onAbort();
    request.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
