import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { run, Server } from 'probot';
import { BODY_BUDGET, type BodyLimits, hasBody, MAX_WEBHOOK_BODY_BYTES, readCappedBody } from './body-cap.js';

type RunOptions = NonNullable<Parameters<typeof run>[1]>;
type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Probot's setup flow (`run` without APP_ID and a key), with its server's request bodies read
 * through the same cap and byte budget as the App's: Probot's handlers (the manifest import, the
 * webhook middleware) read bodies whole with no limit. Probot gives no hook before its own
 * request handler, so its Server's `start` is wrapped for this one call: once the HTTP server
 * listens, and before any request can be read, the cap is put in front of Probot's handler.
 */
export async function runSetupFlow(appFn: Parameters<typeof run>[0], options: RunOptions, limits: BodyLimits = { maxBytes: MAX_WEBHOOK_BODY_BYTES, budget: BODY_BUDGET }): Promise<void> {
  const start = Server.prototype.start;
  Server.prototype.start = async function (this: Server): Promise<HttpServer> {
    const http = await start.call(this);
    capRequestBodies(http, limits);
    return http;
  };
  try {
    // No relay: setup has no app to deliver to, and awaiting one between `listen` and the wrap
    // would let requests in uncapped. (The setup page still reads WEBHOOK_PROXY_URL for the manifest.)
    await run(appFn, { ...options, env: { ...options.env, WEBHOOK_PROXY_URL: undefined } });
  } finally {
    Server.prototype.start = start;
  }
}

/** Puts the body cap in front of every `request` listener of `http`: a body is read (capped) first. */
export function capRequestBodies(http: HttpServer, limits: BodyLimits): void {
  const listeners = http.listeners('request') as Listener[];
  http.removeAllListeners('request');
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    for (const l of listeners) l.call(http, req, res);
  };
  http.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!hasBody(req)) return forward(req, res);
    readCappedBody(req, res, limits).then(
      (body) => {
        if (!body) return;
        // Probot's and @octokit/webhooks' body readers take a pre-read body from `rawBody`.
        Object.assign(req, { body: {}, rawBody: body });
        forward(req, res);
      },
      () => res.destroy(),
    );
  });
}
