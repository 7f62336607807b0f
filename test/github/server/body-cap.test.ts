import { describe, expect, it } from 'vitest';
import { addressKey, ByteBudget, MAX_BODY_BYTES_IN_FLIGHT, MAX_WEBHOOK_BODY_BYTES } from '../../../src/github/server/body-cap.js';

describe('addressKey: who a remote address counts as for the per-address share', () => {
  it('keeps IPv4 addresses and unwraps IPv4-mapped ones', () => {
    expect(addressKey('140.82.115.4')).toBe('140.82.115.4');
    expect(addressKey('::ffff:140.82.115.4')).toBe('140.82.115.4');
    expect(addressKey(undefined)).toBe('');
  });

  it('groups IPv6 addresses by their /64, however they are written', () => {
    const key = '2a0a:a440:0:1::/64';
    expect(addressKey('2a0a:a440:0:1::1')).toBe(key);
    expect(addressKey('2a0a:a440:0000:0001:dead:beef:1:2')).toBe(key);
    expect(addressKey('2A0A:A440::1:ffff:1:2:3')).toBe('2a0a:a440:0:1::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('2a0a:a440:0:2::1')).not.toBe(key);
  });
});

describe('ByteBudget', () => {
  it('refuses what would pass the total or the sender’s share, and forgets a sender that gave all back', () => {
    const b = new ByteBudget(100, 40);
    expect(b.take(40, 'a')).toBe(true);
    expect(b.take(1, 'a')).toBe(false);
    expect(b.take(40, 'b')).toBe(true);
    expect(b.take(21, 'c')).toBe(false); // the total
    expect(b.take(20, 'c')).toBe(true);
    expect(b.inUse).toBe(100);
    b.give(40, 'a');
    expect(b.heldBy('a')).toBe(0);
    expect(b.take(40, 'a')).toBe(true);
  });

  it('by default one address may hold GitHub’s largest delivery next to 50 of 100 KB', () => {
    const b = new ByteBudget(MAX_BODY_BYTES_IN_FLIGHT);
    expect(b.take(MAX_WEBHOOK_BODY_BYTES, 'gh')).toBe(true);
    for (let i = 0; i < 50; i++) expect(b.take(100 * 1024, 'gh')).toBe(true);
    // ...and no one address may hold it all.
    expect(b.perAddress).toBeLessThan(MAX_BODY_BYTES_IN_FLIGHT);
  });
});
