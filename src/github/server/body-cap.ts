import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * GitHub caps webhook payloads at 25 MB, so a larger body is never a real delivery.
 * (@octokit/webhooks' middleware reads bodies whole with no limit: this is the only bound.)
 */
export const MAX_WEBHOOK_BODY_BYTES = 25 * 1024 * 1024;

/**
 * Body bytes all requests of the process may hold at once: the cap above is per request, and a
 * hundred parallel 24 MB bodies would otherwise buffer 2.4 GB. Real deliveries are mostly a few
 * KB; this still takes two of the largest at once.
 */
export const MAX_BODY_BYTES_IN_FLIGHT = 64 * 1024 * 1024;

/** How long a refused connection stays half-closed, for the client to read the answer, before it is dropped. */
const CLOSE_DELAY_MS = 1000;

/** A count of bytes that requests hold, shared by every server of the process that reads bodies. */
export class ByteBudget {
  private used = 0;
  constructor(readonly limit: number) {}

  /** Takes `n` bytes if they fit; false (nothing taken) if not. */
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }

  get inUse(): number {
    return this.used;
  }
}

/** The process's one budget: the App's server and Probot's setup-flow server both draw on it. */
export const BODY_BUDGET = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);

export interface BodyLimits {
  maxBytes: number;
  budget: ByteBudget;
}

/**
 * Reads a request body of at most `maxBytes`, drawing its size from `budget` until the response
 * is done. A larger one, declared by Content-Length or found while a chunked body streams, is
 * answered 413; one the budget cannot hold now, 503: either way its connection is closed without
 * reading on. Resolves to the body, or to undefined when the request is already dealt with.
 */
export function readCappedBody(req: IncomingMessage, res: ServerResponse, { maxBytes, budget }: BodyLimits): Promise<Buffer | undefined> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    refuseUnread(req, 413, `Payload Too Large: webhook bodies are limited to ${maxBytes} bytes`);
    return Promise.resolve(undefined);
  }
  let held = 0;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    budget.give(held);
    held = 0;
    res.off('close', release);
    req.socket.off('close', release);
  };
  // Held until the answer is sent or the connection is gone: the body lives that long.
  res.once('close', release);
  req.socket.once('close', release);
  const take = (n: number): boolean => {
    if (released || !budget.take(n)) return false;
    held += n;
    return true;
  };
  const busy = () => refuseUnread(req, 503, 'Service Unavailable: too many webhook bodies are being read at once; retry', { 'retry-after': '1' });
  // A declared size is taken whole, before any of it is read.
  if (declared !== undefined && !take(Number(declared))) {
    release();
    busy();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (body: Buffer | undefined, err?: unknown) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (!body) release();
      if (err) reject(err);
      else resolve(body);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        chunks.length = 0;
        settle(undefined);
        refuseUnread(req, 413, `Payload Too Large: webhook bodies are limited to ${maxBytes} bytes`);
        return;
      }
      if (declared === undefined && !take(chunk.length)) {
        chunks.length = 0;
        settle(undefined);
        busy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => settle(Buffer.concat(chunks, size));
    const onError = (err: unknown) => settle(undefined, err);
    // The client went away mid-body: nobody is left to answer.
    const onClose = () => settle(undefined);
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/** Whether a request carries a body (any method): a Content-Length above 0, or a chunked one. */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Answers `status` with a JSON error on the socket and closes it, without reading the body. Written
 * on the socket rather than through the response: Node destroys a `Connection: close` socket as
 * soon as the answer is flushed, and closing with the client's bytes unread sends a RST that can
 * wipe the answer before the client reads it. So (like Go's net/http): answer, send FIN, read no
 * more, and drop the connection a moment later.
 */
export function refuseUnread(req: IncomingMessage, status: 401 | 413 | 503, error: string, headers: Record<string, string> = {}): void {
  req.pause(); // once its buffer is full, Node stops reading the socket
  const socket = req.socket;
  const body = JSON.stringify({ error });
  const reason = { 401: 'Unauthorized', 413: 'Payload Too Large', 503: 'Service Unavailable' }[status];
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`);
  const drop = setTimeout(() => socket.destroy(), CLOSE_DELAY_MS);
  drop.unref();
  socket.once('close', () => clearTimeout(drop));
}
