import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { type Logger, pino } from 'pino';
import type { McpServerConfig } from '../../src/config/repo-config.js';
import { SAMPLE_FILES } from '../../src/demo/sample-repo.js';

/** Where the fixture MCP server lives inside the sample repository (so the jail can reach it). */
export const FIXTURE_PATH = 'tools/mcp-fixture.mjs';

/** The sample repository's files plus the fixture MCP server. */
export function filesWithFixture(): Record<string, string> {
  return { ...SAMPLE_FILES, [FIXTURE_PATH]: readFileSync(new URL('../fixtures/mcp-server/fixture-server.mjs', import.meta.url), 'utf8') };
}

export function fixtureServer(extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { name: 'fixture', command: 'node', args: [FIXTURE_PATH], env: [], ...extra };
}

/** A logger whose lines the test can read. */
export function capturingLogger(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      out.push(String(chunk));
      cb();
    },
  });
  return {
    logger: pino({ level: 'info' }, stream),
    lines: () =>
      out
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
