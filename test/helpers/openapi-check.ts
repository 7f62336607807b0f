import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Checks a GitHub REST request against GitHub's own OpenAPI description (`@octokit/openapi`):
 * the method and path must name an operation, its required query parameters must be present, and
 * the JSON body must carry the operation's required fields (with enum and simple type checks on
 * the top-level fields). The description is loaded once, lazily, and indexed by method and segment
 * count so that the check is cheap enough to run on every request a test makes.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
interface Schema {
  $ref?: string;
  type?: string;
  nullable?: boolean;
  enum?: Json[];
  required?: string[];
  properties?: Record<string, Schema>;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
}
interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
  required?: boolean;
}
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { $ref?: string; required?: boolean; content?: Record<string, { schema?: Schema }> };
}
interface Spec {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas?: Record<string, Schema>; parameters?: Record<string, Parameter>; requestBodies?: Record<string, unknown> };
}

/** One OpenAPI path template, split into segments (`null` stands for a `{param}` segment). */
interface Template {
  path: string;
  segments: Array<string | null>;
  /** True when the last segment is a parameter that may in practice hold slashes (`contents/{path}`). */
  greedyTail: boolean;
  operation: Operation;
}

export interface MatchedOperation {
  /** The OpenAPI path template, e.g. `/repos/{owner}/{repo}/issues/{issue_number}/comments`. */
  template: string;
  operationId: string | undefined;
  /** Path parameters by name, URL-decoded. */
  params: Record<string, string>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head'] as const;

/** The work done so far: what makes the check cheap is counted, not timed (see checkWork). */
interface CheckWork {
  /** Reads and parses of the description (a large JSON file). */
  specReads: number;
  indexBuilds: number;
  /** Operations in the index. */
  operations: number;
  /** Path templates a request was compared with, over all requests. */
  templatesTried: number;
}
const work: CheckWork = { specReads: 0, indexBuilds: 0, operations: 0, templatesTried: 0 };

/** A copy of the work counters, for the test that the check stays cheap enough for every request. */
export function checkWork(): CheckWork {
  return { ...work };
}

let spec: Spec | undefined;
/** method → segment count → templates, most specific (most literal segments first) first. */
let index: Map<string, Map<number, Template[]>> | undefined;
/** method → templates whose last parameter may absorb several segments. */
let greedy: Map<string, Template[]> | undefined;

function loadSpec(): Spec {
  if (!spec) {
    const require = createRequire(import.meta.url);
    const file = require.resolve('@octokit/openapi/generated/api.github.com.json');
    work.specReads++;
    spec = JSON.parse(readFileSync(file, 'utf8')) as Spec;
  }
  return spec;
}

function specificity(t: Template): number[] {
  return t.segments.map((s) => (s === null ? 0 : 1));
}

function compareSpecificity(a: Template, b: Template): number {
  const sa = specificity(a);
  const sb = specificity(b);
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const d = (sb[i] ?? 0) - (sa[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function buildIndex(): void {
  if (index) return;
  work.indexBuilds++;
  const s = loadSpec();
  const byMethod = new Map<string, Map<number, Template[]>>();
  const greedyByMethod = new Map<string, Template[]>();
  for (const [path, item] of Object.entries(s.paths)) {
    const segments = path
      .split('/')
      .slice(1)
      .map((seg) => (/^\{[^}]+\}$/.test(seg) ? null : seg));
    const last = path.split('/').pop() ?? '';
    const greedyTail = /^\{(path|ref|name|branch|file_path|filepath|tag_name)\}$/.test(last);
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const t: Template = { path, segments, greedyTail, operation };
      work.operations++;
      let bySize = byMethod.get(method);
      if (!bySize) {
        bySize = new Map();
        byMethod.set(method, bySize);
      }
      const list = bySize.get(segments.length) ?? [];
      list.push(t);
      bySize.set(segments.length, list);
      if (greedyTail) {
        const g = greedyByMethod.get(method) ?? [];
        g.push(t);
        greedyByMethod.set(method, g);
      }
    }
  }
  for (const bySize of byMethod.values()) for (const list of bySize.values()) list.sort(compareSpecificity);
  for (const list of greedyByMethod.values()) list.sort(compareSpecificity);
  index = byMethod;
  greedy = greedyByMethod;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function matchTemplate(t: Template, parts: string[], allowGreedy: boolean): Record<string, string> | undefined {
  const names = [...t.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
  const params: Record<string, string> = {};
  let p = 0;
  for (let i = 0; i < t.segments.length; i++) {
    const seg = t.segments[i];
    const isLast = i === t.segments.length - 1;
    if (seg === null) {
      const name = names[p++] ?? `param${p}`;
      if (isLast && allowGreedy) {
        const rest = parts.slice(i);
        if (rest.length === 0 || rest.includes('')) return undefined;
        params[name] = rest.map(safeDecode).join('/');
        return params;
      }
      const part = parts[i];
      if (part === undefined || part === '') return undefined;
      params[name] = safeDecode(part);
    } else if (parts[i] !== seg) {
      return undefined;
    }
  }
  return parts.length === t.segments.length ? params : undefined;
}

function findTemplate(method: string, pathname: string): { template: Template; params: Record<string, string> } | undefined {
  buildIndex();
  const parts = pathname.split('/').slice(1);
  for (const t of index?.get(method)?.get(parts.length) ?? []) {
    work.templatesTried++;
    const params = matchTemplate(t, parts, false);
    if (params) return { template: t, params };
  }
  for (const t of greedy?.get(method) ?? []) {
    if (parts.length <= t.segments.length) continue;
    work.templatesTried++;
    const params = matchTemplate(t, parts, true);
    if (params) return { template: t, params };
  }
  return undefined;
}

/** Resolves a local `$ref` (`#/components/...`) against the description, following chains. */
function deref<T extends { $ref?: string }>(node: T | undefined): T | undefined {
  let cur: T | undefined = node;
  for (let guard = 0; cur?.$ref && guard < 20; guard++) {
    const ref: string = cur.$ref;
    if (!ref.startsWith('#/')) return undefined;
    let target: unknown = loadSpec();
    for (const key of ref.slice(2).split('/')) {
      target = (target as Record<string, unknown> | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    cur = target as T | undefined;
  }
  return cur;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(schemaType: string, v: unknown): boolean {
  const t = jsonType(v);
  if (schemaType === 'number') return t === 'number' || t === 'integer';
  return schemaType === t;
}

/** Problems of `body` against one schema: its own required fields and top-level enums/types. */
function schemaProblems(schemaIn: Schema | undefined, body: unknown, where: string): string[] {
  const schema = deref(schemaIn);
  if (!schema) return [];
  const problems: string[] = [];
  const branches = schema.oneOf ?? schema.anyOf;
  if (branches && branches.length > 0) {
    const results = branches.map((b) => schemaProblems(b, body, where));
    if (!results.some((r) => r.length === 0)) {
      problems.push(`${where}: body matches none of the ${schema.oneOf ? 'oneOf' : 'anyOf'} branches (${results.map((r) => r.join('; ')).join(' | ')})`);
    }
  }
  for (const part of schema.allOf ?? []) problems.push(...schemaProblems(part, body, where));
  if (schema.type) {
    if (body === null && schema.nullable) return problems;
    if (!typeMatches(schema.type, body)) {
      problems.push(`${where}: body should be ${schema.type}, got ${jsonType(body)}`);
      return problems;
    }
  }
  if (jsonType(body) !== 'object') return problems;
  const obj = body as Record<string, unknown>;
  for (const key of schema.required ?? []) {
    if (!(key in obj) || obj[key] === undefined) problems.push(`${where}: missing required body field "${key}"`);
  }
  for (const [key, propIn] of Object.entries(schema.properties ?? {})) {
    if (!(key in obj) || obj[key] === undefined) continue;
    const prop = deref(propIn);
    if (!prop) continue;
    const v = obj[key];
    if (v === null) {
      if (!prop.nullable && prop.type) problems.push(`${where}: body field "${key}" must not be null`);
      continue;
    }
    if (prop.type && !prop.oneOf && !prop.anyOf && !typeMatches(prop.type, v)) {
      problems.push(`${where}: body field "${key}" should be ${prop.type}, got ${jsonType(v)}`);
      continue;
    }
    if (prop.enum && !prop.enum.includes(v as Json)) {
      problems.push(`${where}: body field "${key}" is ${JSON.stringify(v)}, not one of ${JSON.stringify(prop.enum)}`);
    }
  }
  return problems;
}

/** Finds the OpenAPI operation for a request, or undefined. `/graphql` is not in the description. */
export function matchOperation(method: string, urlPathWithQuery: string): MatchedOperation | undefined {
  const pathname = new URL(urlPathWithQuery, 'https://api.github.com').pathname;
  const found = findTemplate(method.toLowerCase(), pathname.replace(/\/+$/, '') || '/');
  if (!found) return undefined;
  return { template: found.template.path, operationId: found.template.operation.operationId, params: found.params };
}

/**
 * Returns the problems of one request against GitHub's OpenAPI description (empty when it is fine).
 * `urlPathWithQuery` is the path with its query, e.g. `/repos/o/r/issues/1/comments?per_page=100`
 * (a full URL is accepted too). `body` is the parsed JSON body (a string is parsed when it is JSON),
 * or undefined when the request had none.
 */
export function checkRequest(method: string, urlPathWithQuery: string, body: unknown): string[] {
  const m = method.toLowerCase();
  const url = new URL(urlPathWithQuery, 'https://api.github.com');
  const label = `${method.toUpperCase()} ${url.pathname}`;
  if (m === 'post' && url.pathname === '/graphql') {
    const b = typeof body === 'string' ? tryParse(body) : body;
    const query = (b as { query?: unknown } | undefined)?.query;
    return typeof query === 'string' && query.trim() !== '' ? [] : [`${label}: missing GraphQL "query"`];
  }
  const pathname = url.pathname.replace(/\/+$/, '') || '/';
  const found = findTemplate(m, pathname);
  if (!found) return [`${label}: no operation in GitHub's OpenAPI description matches this method and path`];
  const op = found.template.operation;
  const where = `${method.toUpperCase()} ${found.template.path}`;
  const problems: string[] = [];

  for (const pIn of op.parameters ?? []) {
    const p = deref(pIn);
    if (p?.in === 'query' && p.required && p.name && !url.searchParams.has(p.name)) {
      problems.push(`${where}: missing required query parameter "${p.name}"`);
    }
  }

  const rb = deref(op.requestBody);
  const content = rb?.content;
  const parsed = typeof body === 'string' ? (body === '' ? undefined : tryParse(body)) : body;
  if (rb && content) {
    const jsonSchema = content['application/json']?.schema;
    if (parsed === undefined) {
      const missing = jsonSchema ? schemaProblems(jsonSchema, {}, where) : [];
      if (missing.length > 0) problems.push(...missing);
      else if (rb.required === true) problems.push(`${where}: request body is required but none was sent`);
    } else if (jsonSchema && !(typeof body === 'string' && typeof parsed === 'string')) {
      // (a string body that is not JSON was sent with another media type: nothing to check)
      problems.push(...schemaProblems(jsonSchema, parsed, where));
    }
  } else if (parsed !== undefined && !(typeof parsed === 'object' && parsed !== null && Object.keys(parsed).length === 0) && m !== 'get' && m !== 'head' && m !== 'delete') {
    // Octokit sends leftover parameters as the body; an operation without a body ignores them.
    problems.push(`${where}: operation takes no request body, got ${JSON.stringify(parsed).slice(0, 200)}`);
  }
  return problems;
}

function tryParse(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}
