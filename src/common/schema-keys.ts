import { z } from 'zod';

/**
 * The keys the object schema at `path` inside `schema` accepts (through arrays, defaults,
 * optionals and pipes): what an unknown key there could have meant. Empty when the path leads
 * to no object.
 */
export function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let at: z.ZodType | undefined = unwrap(schema);
  for (const seg of path) {
    if (at instanceof z.ZodObject && typeof seg === 'string') at = at.shape[seg] as z.ZodType | undefined;
    else if (at instanceof z.ZodArray && typeof seg === 'number') at = at.element as z.ZodType;
    else if (at instanceof z.ZodRecord) at = at.valueType as z.ZodType;
    else return [];
    at = at && unwrap(at);
  }
  return at instanceof z.ZodObject ? Object.keys(at.shape) : [];
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < 16; i++) {
    if (s instanceof z.ZodDefault || s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodPrefault) s = s.unwrap() as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
    else break;
  }
  return s;
}
