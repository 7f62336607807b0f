import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>` (no credentials). */
  base: string;
  port: number;
  /** Requests refused for a missing or wrong Authorization header. */
  refused: number;
  close(): Promise<void>;
}

const BACKEND = '/usr/lib/git-core/git-http-backend';

/**
 * Git's smart HTTP over the bare repositories under `root` (git-http-backend as CGI), on
 * 127.0.0.1, answering 401 to any request without basic auth `user:password`.
 */
export async function startGitHttpServer(root: string, user: string, password: string): Promise<GitHttpServer> {
  const expected = Buffer.from(`${user}:${password}`).toString('base64');
  const state = { refused: 0 };
  const server = createServer((req, res) => {
    const [scheme = '', token = ''] = (req.headers.authorization ?? '').split(/\s+/);
    if (scheme.toLowerCase() !== 'basic' || token !== expected) {
      state.refused += 1;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
      return;
    }
    cgi(root, user, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    get refused() {
      return state.refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function cgi(root: string, user: string, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_NOSYSTEM: '1',
    // receive-pack (push) is only enabled for an authenticated user.
    REMOTE_USER: user,
    REMOTE_ADDR: '127.0.0.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
  };
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding']);
  if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
  const child = spawn(BACKEND, [], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  req.pipe(child.stdin);
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.on('close', () => {
    const raw = Buffer.concat(out);
    const split = raw.indexOf('\r\n\r\n');
    const head = raw.subarray(0, Math.max(split, 0)).toString('latin1');
    const headers: Record<string, string> = {};
    let status = 200;
    for (const line of head.split('\r\n').filter(Boolean)) {
      const i = line.indexOf(':');
      const name = line.slice(0, i).trim();
      const value = line.slice(i + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers).end(raw.subarray(split < 0 ? 0 : split + 4));
  });
}
