import type { IncomingMessage } from 'node:http';

/**
 * GitHub caps webhook payloads at 25 MB, so a larger body is never a real delivery.
 * (@octokit/webhooks' middleware reads bodies whole with no limit: this is the only bound.)
 */
export const MAX_WEBHOOK_BODY_BYTES = 25 * 1024 * 1024;

/** How long a refused connection stays half-closed, for the client to read the 413, before it is dropped. */
const CLOSE_DELAY_MS = 1000;

/**
 * Reads a request body of at most `maxBytes`. A larger one, declared by Content-Length or found
 * while a chunked body streams, is answered 413 and its connection closed without reading on.
 * Resolves to the body, or to undefined when the request is already dealt with.
 */
export function readCappedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    refuseTooLarge(req, maxBytes);
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (body: Buffer | undefined, err?: unknown) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (err) reject(err);
      else resolve(body);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      settle(undefined);
      refuseTooLarge(req, maxBytes);
    };
    const onEnd = () => settle(Buffer.concat(chunks, size));
    const onError = (err: unknown) => settle(undefined, err);
    // The client went away mid-body: nobody is left to answer.
    const onClose = () => settle(undefined);
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

function refuseTooLarge(req: IncomingMessage, maxBytes: number): void {
  req.pause(); // once its buffer is full, Node stops reading the socket
  const socket = req.socket;
  const body = JSON.stringify({ error: `Payload Too Large: webhook bodies are limited to ${maxBytes} bytes` });
  // Written on the socket rather than through the response: Node destroys a `Connection: close`
  // socket as soon as the answer is flushed, and closing with the client's bytes unread sends a
  // RST that can wipe the 413 before the client reads it. So (like Go's net/http): answer, send
  // FIN, read no more, and drop the connection a moment later.
  socket.end(
    `HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  const drop = setTimeout(() => socket.destroy(), CLOSE_DELAY_MS);
  drop.unref();
  socket.once('close', () => clearTimeout(drop));
}
