import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';

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

/**
 * How long a body may go without a byte before it is dropped (408). GitHub sends a delivery
 * whole, at once; a body that stalls is a client holding its share of the budget.
 */
export const BODY_IDLE_MS = 5000;

/** How long a refused connection stays half-closed, for the client to read the answer, before it is dropped. */
const CLOSE_DELAY_MS = 1000;

/**
 * A count of body bytes that requests hold, shared by every server of the process that reads
 * bodies, and per remote address (see `addressKey`): one address may hold at most `perAddress`.
 * The default share, half, is the smallest that still takes GitHub's largest delivery (25 MB) next
 * to its small ones, from one of its few addresses (or from the reverse proxy in front).
 */
export class ByteBudget {
  private used = 0;
  private readonly byAddress = new Map<string, number>();
  readonly perAddress: number;

  constructor(
    readonly limit: number,
    perAddress?: number,
  ) {
    this.perAddress = perAddress ?? Math.floor(limit / 2);
  }

  /** Takes `n` bytes for `from` if they fit in both bounds; false (nothing taken) if not. */
  take(n: number, from = ''): boolean {
    const mine = this.byAddress.get(from) ?? 0;
    if (this.used + n > this.limit || mine + n > this.perAddress) return false;
    this.used += n;
    this.byAddress.set(from, mine + n);
    return true;
  }

  give(n: number, from = ''): void {
    this.used -= n;
    const left = (this.byAddress.get(from) ?? 0) - n;
    if (left > 0) this.byAddress.set(from, left);
    else this.byAddress.delete(from);
  }

  get inUse(): number {
    return this.used;
  }

  heldBy(from: string): number {
    return this.byAddress.get(from) ?? 0;
  }
}

/** The process's one budget: the App's server and Probot's setup-flow server both draw on it. */
export const BODY_BUDGET = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);

export interface BodyLimits {
  maxBytes: number;
  budget: ByteBudget;
  /** Milliseconds a body may go without a byte (default BODY_IDLE_MS). */
  idleMs?: number;
}

/**
 * Who a remote address counts as for the per-address share: an IPv4 address (IPv4-mapped IPv6
 * unwrapped), or an IPv6 address's /64, since one host commonly has a whole /64 to pick from.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return '';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])));
  const [left, right] = address.split('%')[0]!.split('::') as [string, string | undefined];
  const l = groups(left);
  const r = right === undefined ? [] : groups(right);
  const full = right === undefined ? l : [...l, ...Array<string>(8 - l.length - r.length).fill('0'), ...r];
  return `${full
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * Reads a request body of at most `maxBytes`, drawing each chunk from `budget` as it arrives
 * (never the declared size: a declared body that never comes holds nothing) until the response is
 * done. A larger body, declared by Content-Length or found while it streams, is answered 413; a
 * chunk the budget (or the sender's share) cannot hold now, 503; a body that goes `idleMs` without
 * a byte, 408: each time its connection is closed without reading on. Resolves to the body, or to
 * undefined when the request is already dealt with.
 */
export function readCappedBody(req: IncomingMessage, res: ServerResponse, { maxBytes, budget, idleMs = BODY_IDLE_MS }: BodyLimits): Promise<Buffer | undefined> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    refuseUnread(req, 413, `Payload Too Large: webhook bodies are limited to ${maxBytes} bytes`);
    return Promise.resolve(undefined);
  }
  const from = addressKey(req.socket.remoteAddress);
  let held = 0;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    budget.give(held, from);
    held = 0;
    res.off('close', release);
    req.socket.off('close', release);
  };
  // Held until the answer is sent or the connection is gone: the body lives that long.
  res.once('close', release);
  req.socket.once('close', release);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let idle: NodeJS.Timeout | undefined;
    const settle = (body: Buffer | undefined, err?: unknown) => {
      clearTimeout(idle);
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (!body) release();
      if (err) reject(err);
      else resolve(body);
    };
    const refuse = (...args: Parameters<typeof refuseUnread>) => {
      chunks.length = 0;
      settle(undefined);
      refuseUnread(...args);
    };
    const wait = () => {
      clearTimeout(idle);
      idle = setTimeout(() => refuse(req, 408, `Request Timeout: no body bytes arrived for ${idleMs} ms`), idleMs);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return refuse(req, 413, `Payload Too Large: webhook bodies are limited to ${maxBytes} bytes`);
      if (released || !budget.take(chunk.length, from)) {
        return refuse(req, 503, 'Service Unavailable: too many webhook bodies are being read at once; retry', { 'retry-after': '1' });
      }
      held += chunk.length;
      chunks.push(chunk);
      wait();
    };
    const onEnd = () => settle(Buffer.concat(chunks, size));
    // The client went away mid-body (Node reports `aborted`): nobody is left to answer, and a
    // stranger hanging up is not the server's failure to log.
    const onError = (err: unknown) => settle(undefined, (err as { code?: string }).code === 'ECONNRESET' ? undefined : err);
    const onClose = () => settle(undefined);
    wait();
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
export function refuseUnread(req: IncomingMessage, status: 401 | 408 | 413 | 503, error: string, headers: Record<string, string> = {}): void {
  req.pause(); // once its buffer is full, Node stops reading the socket
  const socket = req.socket;
  const body = JSON.stringify({ error });
  const reason = { 401: 'Unauthorized', 408: 'Request Timeout', 413: 'Payload Too Large', 503: 'Service Unavailable' }[status];
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`);
  const drop = setTimeout(() => socket.destroy(), CLOSE_DELAY_MS);
  drop.unref();
  socket.once('close', () => clearTimeout(drop));
}
