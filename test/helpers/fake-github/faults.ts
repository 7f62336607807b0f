import type { Responses } from './responses.js';
import type { State } from './state.js';
import type { FaultKind } from './types.js';
import type { Reply } from './util.js';

export function createFaults(ctx: State & Responses) {
  const { installationId, faults, json, notFound } = ctx;

  function faultReply(kind: FaultKind): Reply {
    if (kind === 403) return json(403, { message: 'Resource not accessible by integration', documentation_url: 'https://docs.github.com/rest', status: '403' });
    if (kind === 404) return notFound();
    if (kind === 410) return json(410, { message: 'Gone', documentation_url: 'https://docs.github.com/rest', status: '410' });
    if (kind === 502 || kind === 'performed-then-502') return [502, JSON.stringify({ message: 'Server Error' }), { 'content-type': 'application/json; charset=utf-8' }];
    if (kind === 'secondary-rate-limit') {
      return json(
        403,
        {
          message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
          documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          status: '403',
        },
        { 'retry-after': '1' },
      );
    }
    const reset = Math.ceil(Date.now() / 1000) + 1;
    return json(
      403,
      {
        message: `API rate limit exceeded for installation ID ${installationId}.`,
        documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
        status: '403',
      },
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-used': '5000', 'x-ratelimit-reset': String(reset) },
    );
  }

  function takeFault(method: string, path: string, write: boolean): FaultKind | undefined {
    for (const f of faults) {
      if (f.remaining <= 0) continue;
      if (f.filter?.write !== undefined && f.filter.write !== write) continue;
      if (f.filter?.method && f.filter.method.toUpperCase() !== method) continue;
      if (f.filter?.path && !f.filter.path.test(path)) continue;
      f.remaining--;
      return f.kind;
    }
    return undefined;
  }

  return { faultReply, takeFault };
}
