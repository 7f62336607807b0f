import type { Logger } from 'pino';

/** A running relay from a smee.io channel to this server. */
export interface WebhookRelay {
  stop(): Promise<void>;
}

interface SmeeClientLike {
  start(): unknown;
  stop?(): unknown;
}

/**
 * Development aid: relays the deliveries posted to `source` (a smee.io channel, WEBHOOK_PROXY_URL)
 * to `target` on this server, as Probot's own server does. Uses the optional `smee-client`
 * package (`npm install --save-dev smee-client`); without it, says so and relays nothing.
 * The relayed deliveries go through the same signature check as any other.
 */
export async function startWebhookRelay(source: string, target: string, log: Logger): Promise<WebhookRelay | undefined> {
  const specifier = 'smee-client'; // optional: not a dependency, so not resolved at build time
  let SmeeClient: new (o: { source: string; target: string; logger: Pick<Logger, 'info' | 'error'> }) => SmeeClientLike;
  try {
    ({ SmeeClient } = (await import(specifier)) as { SmeeClient: typeof SmeeClient });
  } catch {
    log.warn(
      `WEBHOOK_PROXY_URL is set but smee-client is not installed, so nothing is relayed from it: run \`npm install --save-dev smee-client\`, or \`npx smee-client --url ${source} --target ${target}\` beside serve`,
    );
    return undefined;
  }
  const client = new SmeeClient({
    source,
    target,
    logger: { info: (...a: unknown[]) => log.debug(a.map(String).join(' ')), error: (...a: unknown[]) => log.warn(a.map(String).join(' ')) } as Pick<Logger, 'info' | 'error'>,
  });
  const events = (await client.start()) as { close?: () => void } | undefined;
  return {
    async stop() {
      if (client.stop) await client.stop();
      else events?.close?.();
    },
  };
}
