import { describe, expect, it } from 'vitest';
import { SandboxUnavailableError } from '../../src/ports/sandbox.js';
import { clampLimits, ownHardLimits, parseHardLimits } from '../../src/sandbox/rlimits.js';
import { jail, jailRoot, runIn } from '../helpers/sandbox-jail.js';

// The layout of /proc/<pid>/limits ("%-25s %-20s %-20s %-10s"), with a 20-digit value that
// leaves a single space before the next column.
const LIMITS = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            3600                 seconds   
Max file size             18446744073709551614 18446744073709551614 bytes     
Max data size             unlimited            unlimited            bytes     
Max core file size        0                    unlimited            bytes     
Max processes             96362                100000               processes 
Max open files            1024                 4097                 files     
Max realtime timeout      unlimited            unlimited            us        
`;

describe('the hard limits the jail stays under', () => {
  it("reads each hard limit in ulimit's units: counts as they are, bytes as 1024-byte blocks rounded down", () => {
    expect(parseHardLimits(LIMITS)).toEqual({
      '-t': 3600,
      '-f': 2 ** 54, // 2^64 - 2 bytes, past a double's precision: still far above any limit the jail sets
      '-c': Number.POSITIVE_INFINITY,
      '-u': 100_000,
      '-n': 4097,
    });
    expect(parseHardLimits(LIMITS.replace('18446744073709551614 bytes', '1500                 bytes'))['-f']).toBe(1);
  });

  it('refuses a table without a limit the jail sets', () => {
    expect(() => parseHardLimits(LIMITS.replace(/^Max open files.*$/m, ''))).toThrow(SandboxUnavailableError);
    expect(() => parseHardLimits(LIMITS.replace('4097 ', 'many '))).toThrow(/Max open files/);
  });

  it("never sets a value above the bot's own hard limit, nor a soft value above the hard one", () => {
    const own = parseHardLimits(LIMITS);
    const set = clampLimits(
      [
        { flag: '-t', soft: 7200, hard: 7210 },
        { flag: '-n', soft: 8192, hard: 8192 },
        { flag: '-u', soft: 4096, hard: 4096 },
        { flag: '-c', soft: 0, hard: 0 },
      ],
      own,
    );
    expect(set).toEqual([
      { flag: '-t', soft: 3600, hard: 3600 },
      { flag: '-n', soft: 4097, hard: 4097 },
      { flag: '-u', soft: 4096, hard: 4096 },
      { flag: '-c', soft: 0, hard: 0 },
    ]);
  });

  it("gives a jailed command no more open files than the bot's own hard limit, even when asked for more", async () => {
    const { ws } = await jailRoot();
    const own = ownHardLimits()['-n'];
    const result = await runIn(jail({ limits: { maxOpenFiles: own + 1000 } }), ws, 'echo "$(ulimit -Sn) $(ulimit -Hn)"');
    expect(result.exitCode).toBe(0);
    expect(result.output.trim()).toBe(`${own} ${own}`);
  });
});
