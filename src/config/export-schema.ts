import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { GoalSpecSchema } from '../goal/schema.js';
import { RepoConfigSchema, repoConfigJsonSchema } from './repo-config.js';

export const SCHEMA_FILES = {
  repoConfig: 'schema/goal-loop.schema.json',
  goalSpec: 'schema/goal-spec.schema.json',
} as const;

const BEGIN = '<!-- repo-config-reference -->';
const END = '<!-- /repo-config-reference -->';

export function goalSpecJsonSchema(): unknown {
  return z.toJSONSchema(GoalSpecSchema, { io: 'input' });
}

/** The README's table of repo config keys, from the zod descriptions. */
export function repoConfigReference(): string {
  const rows = Object.entries(RepoConfigSchema.shape).map(([key, schema]) => {
    const json = z.toJSONSchema(schema as z.ZodType, { io: 'input' }) as { default?: unknown; description?: string };
    const dflt = json.default === undefined ? '' : `\`${JSON.stringify(json.default)}\``;
    return `| \`${key}\` | ${dflt} | ${(json.description ?? '').replace(/\|/g, '\\|')} |`;
  });
  return ['| key | default | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

export function renderReadme(readme: string): string {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0) throw new Error(`README has no ${BEGIN} marker`);
  const tail = end < 0 ? readme.slice(start + BEGIN.length) : readme.slice(end + END.length);
  return `${readme.slice(0, start)}${BEGIN}\n${repoConfigReference()}\n${END}${tail}`;
}

export function schemaText(schema: unknown): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** `npm run schema`: writes the JSON Schemas for editors and the README's config table. */
if (process.argv.includes('--write')) {
  writeFileSync(SCHEMA_FILES.repoConfig, schemaText(repoConfigJsonSchema()));
  writeFileSync(SCHEMA_FILES.goalSpec, schemaText(goalSpecJsonSchema()));
  writeFileSync('README.md', renderReadme(readFileSync('README.md', 'utf8')));
  process.stdout.write(`wrote ${Object.values(SCHEMA_FILES).join(', ')} and the README's config table\n`);
}
