import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { objectKeysAt } from '../../src/common/schema-keys.js';

describe('objectKeysAt', () => {
  const schema = z.strictObject({
    name: z.string(),
    servers: z.array(z.strictObject({ command: z.string(), args: z.array(z.string()).default([]) })).default([]),
    limits: z.strictObject({ max: z.number() }).optional(),
  });

  it('lists the keys of the object at a path, through arrays, defaults and optionals', () => {
    expect(objectKeysAt(schema, [])).toEqual(['name', 'servers', 'limits']);
    expect(objectKeysAt(schema, ['servers', 0])).toEqual(['command', 'args']);
    expect(objectKeysAt(schema, ['limits'])).toEqual(['max']);
  });

  it('is empty where the path leads to no object', () => {
    expect(objectKeysAt(schema, ['name'])).toEqual([]);
    expect(objectKeysAt(schema, ['nope', 'deeper'])).toEqual([]);
    expect(objectKeysAt(schema, ['servers', 'x'])).toEqual([]);
  });
});
