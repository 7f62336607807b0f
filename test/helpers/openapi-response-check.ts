import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Checks a response the fake GitHub gives against GitHub's own OpenAPI description
 * (`@octokit/openapi`), all the way down: required fields, types, nullability, enums.
 */

interface Schema {
  $ref?: string;
  type?: string;
  nullable?: boolean;
  enum?: unknown[];
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
}
interface Spec {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string; content?: Record<string, { schema: Schema }> }> }>>;
}
let spec: Spec | undefined;
function loadSpec(): Spec {
  spec ??= JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8')) as Spec;
  return spec;
}
function deref<T extends { $ref?: string }>(s: T): T {
  let cur = s;
  while (cur.$ref)
    cur = cur.$ref
      .slice(2)
      .split('/')
      .reduce((o: unknown, k) => (o as Record<string, unknown>)[k], loadSpec()) as T;
  return cur;
}

/** Problems of a response body against a schema, all the way down: required fields, types, nullability, enums. */
function responseProblems(schemaIn: Schema, v: unknown, at: string): string[] {
  const s = deref(schemaIn);
  if (v === null) return s.nullable || (!s.type && !s.allOf && !s.oneOf && !s.anyOf) ? [] : [`${at}: null`];
  const problems: string[] = [];
  for (const part of s.allOf ?? []) problems.push(...responseProblems(part, v, at));
  const branches = s.oneOf ?? s.anyOf;
  if (branches && !branches.some((b) => responseProblems(b, v, at).length === 0)) problems.push(`${at}: matches no branch (${branches.map((b) => responseProblems(b, v, at).join('; ')).join(' | ')})`);
  const t = Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
  if (s.type && !(s.type === t || (s.type === 'number' && t === 'integer'))) return [...problems, `${at}: ${t}, not ${s.type}`];
  if (s.enum && !s.enum.includes(v)) problems.push(`${at}: ${JSON.stringify(v)} not in ${JSON.stringify(s.enum)}`);
  if (Array.isArray(v) && s.items) for (const [i, x] of v.entries()) problems.push(...responseProblems(s.items, x, `${at}[${i}]`));
  if (t === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const k of s.required ?? []) if (!(k in o)) problems.push(`${at}.${k}: missing`);
    for (const [k, p] of Object.entries(s.properties ?? {})) if (k in o) problems.push(...responseProblems(p, o[k], `${at}.${k}`));
  }
  return problems;
}

/**
 * The problems of a response body against the operation's response schema in GitHub's OpenAPI
 * description (empty when it conforms): `template` as the description names the path.
 */
export function checkResponse(template: string, method: string, status: number, body: unknown): string[] {
  const response = loadSpec().paths[template]?.[method]?.responses[String(status)];
  const schema = response && deref(response).content?.['application/json']?.schema;
  if (!schema) return [`${method.toUpperCase()} ${template}: no ${status} JSON response in the description`];
  return responseProblems(schema, body, 'body');
}
