import { connect, type Socket } from 'node:net';

/** What a raw HTTP/1.1 client saw. */
export interface RawExchange {
  /** The raw response, if any arrived. */
  response: string;
  /** Body bytes the client handed to its socket before it stopped. */
  sent: number;
  /** The server hung up (rather than the client giving up after the response). */
  closedByServer: boolean;
}

export const statusOf = (x: { response: string }) => Number(/^HTTP\/1\.1 (\d{3})/.exec(x.response)?.[1]);

function head(path: string, headers: Record<string, string>): string {
  return `POST ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
}

/**
 * A client that keeps sending body bytes (up to `budget`, honouring backpressure) until the
 * server answers or hangs up. Chunked when `contentLength` is undefined. If the budget is spent
 * with no answer, it waits `patienceMs` more and gives up.
 */
export function streamBody(o: { port: number; path: string; headers: Record<string, string>; contentLength?: number; budget: number; patienceMs?: number }): Promise<RawExchange> {
  const framing: Record<string, string> = o.contentLength === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(o.contentLength) };
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const frame = o.contentLength === undefined ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
  return new Promise((resolve) => {
    const socket = connect(o.port, '127.0.0.1');
    const x: RawExchange = { response: '', sent: 0, closedByServer: true };
    let answered = false;
    const giveUp = (ms: number) =>
      setTimeout(() => {
        x.closedByServer = false;
        socket.destroy();
      }, ms).unref();
    socket.on('data', (d: Buffer) => {
      x.response += d.toString('latin1');
      if (answered) return;
      answered = true;
      // Guard against a server that answers but keeps the connection open; well above the
      // second a refusing server waits before it drops the connection.
      giveUp(10_000);
    });
    socket.on('error', () => undefined); // EPIPE / ECONNRESET once the server hangs up
    socket.on('close', () => resolve(x));
    socket.on('connect', async () => {
      socket.write(head(o.path, { host: '127.0.0.1', ...o.headers, ...framing }));
      while (!answered && !socket.destroyed && x.sent < o.budget) {
        x.sent += chunk.length;
        if (!socket.write(frame)) await writable(socket);
      }
      // Budget spent without an answer: finish the body so a server that reads it all answers.
      if (!answered && !socket.destroyed && o.contentLength === undefined) socket.write('0\r\n\r\n');
      if (!answered) giveUp(o.patienceMs ?? 30_000);
    });
  });
}

/** Resolves when the socket can take more, or is gone. */
function writable(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.on('drain', done).on('close', done);
  });
}

/**
 * A request that declares `contentLength` body bytes, sends `sendBytes` of them and holds the
 * connection open: the body a slow (or hostile) client keeps a server waiting for.
 */
export function holdBody(o: { port: number; path: string; headers: Record<string, string>; contentLength: number; sendBytes: number; from?: string }): {
  /** The first bytes of a response, or '' if the connection closed (or `close`d) with none. */
  answer: Promise<string>;
  close(): void;
} {
  const socket = connect({ port: o.port, host: '127.0.0.1', ...(o.from ? { localAddress: o.from } : {}) });
  socket.on('error', () => undefined);
  socket.on('connect', () => socket.write(Buffer.concat([Buffer.from(head(o.path, { host: '127.0.0.1', ...o.headers, 'content-length': String(o.contentLength) })), Buffer.alloc(o.sendBytes, 0x20)])));
  const answer = new Promise<string>((resolve) => {
    socket.once('data', (d: Buffer) => resolve(d.toString('latin1')));
    socket.once('close', () => resolve(''));
  });
  return { answer, close: () => socket.destroy() };
}

/**
 * One whole request (head and body in one write, as GitHub sends a delivery) from a chosen local
 * address (any of 127.0.0.0/8 reaches a server on 127.0.0.1): what a client at another IP sees.
 */
export function postFrom(o: { port: number; path: string; headers: Record<string, string>; body: string; from?: string }): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = connect({ port: o.port, host: '127.0.0.1', ...(o.from ? { localAddress: o.from } : {}) });
    const body = Buffer.from(o.body);
    const x: RawExchange = { response: '', sent: body.length, closedByServer: true };
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      x.response += d.toString('latin1');
      // A whole answer in hand (the server keeps the connection alive): done.
      const [headEnd, length] = [x.response.indexOf('\r\n\r\n'), /\r\ncontent-length: (\d+)/i.exec(x.response)?.[1]];
      const whole = length !== undefined ? x.response.length >= headEnd + 4 + Number(length) : x.response.endsWith('\r\n0\r\n\r\n');
      if (headEnd >= 0 && whole) {
        x.closedByServer = false;
        socket.destroy();
      }
    });
    socket.on('close', () => resolve(x));
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from(head(o.path, { host: '127.0.0.1', ...o.headers, 'content-length': String(body.length) })), body])));
    setTimeout(() => socket.destroy(), 60_000).unref();
  });
}
