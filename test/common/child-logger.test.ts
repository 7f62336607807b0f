import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/logging.js';
import { childLogger } from '../../src/common/child-logger.js';
import { repeatedKeys } from '../helpers/json-keys.js';

function capture(make: (sink: Writable) => pino.Logger): { lines: () => string[]; log: pino.Logger } {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString();
      done();
    },
  });
  return { lines: () => out.split('\n').filter(Boolean), log: make(sink) };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('childLogger', () => {
  it('adds only the bindings the logger does not have: each key once per line, the outer value kept', async () => {
    const { lines, log } = capture((sink) => pino({ level: 'info' }, sink));
    const worker = childLogger(log, { goal: 'o/r#g1', worker: 'w1' });
    const loop = childLogger(worker, { goal: 'g1' });
    const agent = childLogger(loop, { goal: 'g1', task: 't1', attempt: 2 });
    agent.info('turn');
    await flush();
    expect(lines()).toHaveLength(1);
    expect(repeatedKeys(lines()[0]!)).toEqual([]);
    expect(JSON.parse(lines()[0]!)).toMatchObject({ goal: 'o/r#g1', worker: 'w1', task: 't1', attempt: 2, msg: 'turn' });
  });
});

describe('the process logger', () => {
  it("drops a call's field its logger already binds", async () => {
    const { lines, log } = capture((sink) => createLogger('info', sink));
    const goal = childLogger(log, { goal: 'g1' });
    goal.info({ goal: 'g1', paths: ['a'] }, 'setup output left out');
    goal.warn({ name: 'other' }, 'named');
    goal.info('plain');
    await flush();
    expect(lines()).toHaveLength(3);
    for (const l of lines()) expect(repeatedKeys(l), l).toEqual([]);
    expect(JSON.parse(lines()[0]!)).toMatchObject({ goal: 'g1', paths: ['a'], msg: 'setup output left out' });
  });
});

describe('repeatedKeys (the test helper)', () => {
  it('finds a key repeated in an object, at any depth, and nothing in strings or arrays', () => {
    expect(repeatedKeys('{"goal":"x","goal":"x"}')).toEqual(['goal']);
    expect(repeatedKeys('{"a":{"b":1,"b":2},"c":"\\"a\\":1,","d":["a","a"],"e":[{"a":1},{"a":1}]}')).toEqual(['b']);
    expect(repeatedKeys('{"a":1,"b":{"a":1}}')).toEqual([]);
  });
});
