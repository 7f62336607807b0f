import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage } from '../../common/errors.js';
import type { SandboxProcess } from '../../ports/sandbox.js';

/** The server wrote something that is not a JSON-RPC message: it is broken, and is stopped. */
export class MalformedOutputError extends Error {
  override name = 'MalformedOutputError';
}

/**
 * MCP's stdio transport over a process the sandbox started (the SDK's own stdio transport
 * spawns its own, unjailed, process). A line that is not a JSON-RPC message ends the
 * connection: a pending call then fails at once instead of waiting for its timeout.
 */
export class SandboxTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(private readonly proc: SandboxProcess) {}

  async start(): Promise<void> {
    this.proc.stdout.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      while (true) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (err) {
          this.onerror?.(new MalformedOutputError(`wrote a line that is not a JSON-RPC message (${err instanceof Error ? err.message.split('\n')[0] : errorMessage(err)})`));
          this.proc.kill();
          return;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    void this.proc.exited.then(() => this.finish());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the MCP server is not running');
    await new Promise<void>((resolve, reject) => {
      this.proc.stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
    });
  }

  async close(): Promise<void> {
    this.proc.kill();
    await this.proc.exited;
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
