import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { goalSpecJsonSchema, renderReadme, SCHEMA_FILES, schemaText } from '../../src/config/export-schema.js';
import { repoConfigJsonSchema } from '../../src/config/repo-config.js';

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));

describe('published schemas', () => {
  it('match the zod schemas (run `npm run schema` after changing them)', () => {
    expect(readFileSync(root(SCHEMA_FILES.repoConfig), 'utf8')).toBe(schemaText(repoConfigJsonSchema()));
    expect(readFileSync(root(SCHEMA_FILES.goalSpec), 'utf8')).toBe(schemaText(goalSpecJsonSchema()));
  });

  it('keep the README config table in step with the zod descriptions', () => {
    const readme = readFileSync(root('README.md'), 'utf8');
    expect(renderReadme(readme)).toBe(readme);
  });

  it('describe every repo config key, so editors can show help', () => {
    const schema = repoConfigJsonSchema() as { properties: Record<string, { description?: string }>; additionalProperties?: boolean };
    for (const [key, prop] of Object.entries(schema.properties)) expect(prop.description, key).toBeTruthy();
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['label', 'setup', 'gate', 'protected_paths', 'sandbox', 'network', 'mcp_servers']));
  });
});
