import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { AcceptEvent } from '../handlers/base.js';
import { goalEventFromPayload } from '../handlers/payload-events.js';

/** The events goalLoopApp (app.ts) hands to the intake; their actions are sorted out by goalEventFromPayload. */
const GOAL_EVENT_NAMES = new Set(['issues', 'issue_comment', 'pull_request', 'pull_request_review']);

/** @octokit/webhooks' test of the Content-Type, so that what it would refuse (415) still goes to it. */
const APPLICATION_JSON = /^\s*(application\/json)\s*(?:;|$)/u;

/**
 * Takes a delivery of one of the App's goal events whose signature `serve` has checked: parses it
 * once, records its event in the inbox (intake.accept: durable before the answer, as through
 * Probot) and answers 200, or 500 if the inbox could not take it (GitHub may redeliver).
 *
 * Probot's middleware would check the signature again and build an installation Octokit for the
 * event before any handler runs (about 0.3 ms a delivery): the goal handlers never use it, the
 * intake authenticates later, off the acknowledgement path. Returns false, having done nothing,
 * for any other delivery (another event, a header or body Probot answers 4xx): Probot takes it.
 */
export async function acceptGoalDelivery(req: IncomingMessage, res: ServerResponse, body: Buffer, accept: AcceptEvent, log: Logger): Promise<boolean> {
  const name = req.headers['x-github-event'];
  const id = req.headers['x-github-delivery'];
  const contentType = req.headers['content-type'];
  if (typeof name !== 'string' || !GOAL_EVENT_NAMES.has(name) || typeof id !== 'string' || typeof contentType !== 'string' || !APPLICATION_JSON.test(contentType)) return false;
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return false; // Probot answers 400 Invalid JSON
  }
  if (typeof payload !== 'object' || payload === null) return false;
  try {
    const event = goalEventFromPayload(name, id, payload);
    if (event) await accept(event);
  } catch (err) {
    log.error({ err, delivery: id, event: name }, 'webhook not recorded');
    const answer = JSON.stringify({ error: 'the delivery could not be recorded; retry' });
    res.writeHead(500, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }).end(answer);
    return true;
  }
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' }).end('ok\n');
  return true;
}
