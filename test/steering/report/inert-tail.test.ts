import { describe, expect, it } from 'vitest';
import { lastLines } from '../../../src/steering/report/inert.js';

describe('an output tail in a report', () => {
  it('drops the blanks a tool pads its lines with, so they never fill the room meant for the output', () => {
    expect(lastLines(`a${' '.repeat(400)}\nb\t \n  c  `, 5)).toBe('a\nb\n  c');
    expect(lastLines(`${'x\n'.repeat(10)}last${' '.repeat(300)}`, 2)).toBe('…\nx\nlast');
  });
});
