import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { headChars } from '../../common/untrusted.js';

/** `sha256=` and 64 hex digits: the only X-Hub-Signature-256 worth reading a body for. */
const SIGNATURE = /^sha256=[0-9a-f]{64}$/i;

/** The delivery's signature header, if it has the shape of one. */
export function signatureOf(headers: IncomingHttpHeaders): string | undefined {
  const value = headers['x-hub-signature-256'];
  return typeof value === 'string' && SIGNATURE.test(value) ? value : undefined;
}

/** Whether `signature` is the HMAC-SHA256 of the raw body with `secret` (compared in constant time). */
export function signatureMatches(secret: string, body: Buffer, signature: string): boolean {
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice('sha256='.length), 'hex'));
}

/** What a log line may say about a refused delivery: its id and event, bounded; nothing of its body. */
export function refusedDelivery(headers: IncomingHttpHeaders, bytes?: number): Record<string, unknown> {
  const bounded = (v: string | string[] | undefined) => (typeof v === 'string' ? headChars(v, 80) : undefined);
  return { delivery: bounded(headers['x-github-delivery']), event: bounded(headers['x-github-event']), ...(bytes === undefined ? {} : { bytes }) };
}
