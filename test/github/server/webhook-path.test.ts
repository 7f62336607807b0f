import { describe, expect, it } from 'vitest';
import { isWebhookPath } from '../../../src/github/server/serve.js';
import { callWithDeadline } from '../../helpers/deadline.js';

describe('isWebhookPath', () => {
  it('matches the path as @octokit/webhooks does: trailing slashes and a query ignored', () => {
    expect(isWebhookPath('/api/github/webhooks', '/api/github/webhooks')).toBe(true);
    expect(isWebhookPath('/api/github/webhooks///', '/api/github/webhooks/')).toBe(true);
    expect(isWebhookPath('/api/github/webhooks?x=1', '/api/github/webhooks')).toBe(true);
    expect(isWebhookPath('/', '/')).toBe(true);
    expect(isWebhookPath('///', '/')).toBe(true);
    expect(isWebhookPath('/api/github', '/api/github/webhooks')).toBe(false);
    expect(isWebhookPath('', '/')).toBe(true);
  });

  // Every POST's URL goes through this twice, before anything is authenticated. `/\/+$/` restarted
  // at every slash of a run that does not end the URL: a 16 KB URL (Node's header limit) cost half
  // a second; 1 MB of slashes would take about half an hour, a scan a millisecond.
  it('attack: a URL of a million slashes and one letter is checked in linear time', async () => {
    const url = `${'/'.repeat(1024 * 1024)}x`;
    const r = await callWithDeadline('dist/src/github/server/serve.js', 'isWebhookPath', [url, '/api/github/webhooks'], 20_000);
    expect(r).toEqual({ ok: true, value: false });
  });
});
