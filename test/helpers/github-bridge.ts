import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BridgedRequest {
  method: string;
  /** The path as api.github.com knows it (no `/api/v3` prefix). */
  path: string;
  body: string;
}

export interface GitHubBridge {
  /** For a child process: Probot reads GHE_HOST / GHE_PROTOCOL as its API base URL. */
  env: { GHE_HOST: string; GHE_PROTOCOL: string };
  /**
   * The next request matching `match` is forwarded (GitHub acts on it) but its answer is held
   * back forever: the caller learns of it and can kill the process that is waiting for it.
   */
  holdResponse(match: (r: BridgedRequest) => boolean): Promise<BridgedRequest>;
  close(): Promise<void>;
}

/**
 * Lets a child process reach the fake GitHub (nock, which lives in the test process): a
 * loopback HTTP server that replays each request with fetch to https://api.github.com, where
 * nock answers it. Nothing about GitHub is faked here; this only carries requests across.
 */
export async function githubBridge(): Promise<GitHubBridge> {
  const holds: Array<{ match: (r: BridgedRequest) => boolean; resolve: (r: BridgedRequest) => void }> = [];
  const server: Server = createServer((req, res) => void forward(req, res).catch((err: unknown) => fail(res, err)));
  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = (req.url ?? '/').replace(/^\/api\/v3(?=\/)/, '').replace(/^\/api\/graphql/, '/graphql');
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || ['host', 'connection', 'content-length', 'accept-encoding'].includes(k)) continue;
      headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    const method = req.method ?? 'GET';
    const answer = await fetch(`https://api.github.com${path}`, { method, headers, ...(body && method !== 'GET' && method !== 'HEAD' ? { body } : {}) });
    const text = await answer.text();
    const seen = { method, path, body };
    const hold = holds.findIndex((h) => h.match(seen));
    if (hold >= 0) {
      holds.splice(hold, 1)[0]!.resolve(seen);
      return; // never answered: the caller is meant to die waiting
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection'].includes(k)) out[k] = v;
    });
    res.writeHead(answer.status, out);
    res.end(text);
  }
  function fail(res: ServerResponse, err: unknown): void {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ message: `bridge: ${(err as Error).message}` }));
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    env: { GHE_HOST: `127.0.0.1:${port}`, GHE_PROTOCOL: 'http' },
    holdResponse: (match) => new Promise((resolve) => holds.push({ match, resolve })),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
