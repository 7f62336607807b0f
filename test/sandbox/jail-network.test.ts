import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessSandbox } from '../../src/sandbox/process-sandbox.js';
import { jail, jailRoot, nodeScript, runIn } from '../helpers/sandbox-jail.js';

// Each probe also runs unjailed (ProcessSandbox) to prove it would see a leak.
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** A real TCP (or abstract unix) listener on the host that counts connections. */
async function listener(where: { port: 0; host: '127.0.0.1' } | { path: string }): Promise<{ server: Server; connections: () => number; address: string | number }> {
  let connections = 0;
  const server = createServer((sock) => {
    connections += 1;
    sock.on('error', () => undefined); // a probe may reset the connection
    sock.end('hello from the host\n');
  });
  await new Promise<void>((resolve) => server.listen(where, resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  const address = 'path' in where ? where.path : (server.address() as AddressInfo).port;
  return { server, connections: () => connections, address };
}

const connectProbe = (target: string) =>
  nodeScript(
    `const s = require('net').connect(${target}); s.setTimeout(3000); ` +
      `s.on('data', (d) => { console.log('CONNECTED', String(d).trim()); process.exit(0); }); ` +
      `s.on('timeout', () => { console.log('TIMEOUT'); process.exit(3); }); ` +
      `s.on('error', (e) => { console.log('ERROR', e.code); process.exit(3); });`,
  );

describe('the jail has no network', () => {
  it('cannot connect to a listener on the host loopback (node and bash /dev/tcp)', async () => {
    const { ws } = await jailRoot();
    const tcp = await listener({ port: 0, host: '127.0.0.1' });
    const probe = `${connectProbe(`${tcp.address}, '127.0.0.1'`)}; (exec 3<>/dev/tcp/127.0.0.1/${tcp.address} && echo BASH-CONNECTED) 2>&1; echo probed`;

    const unjailed = await runIn(new ProcessSandbox(), ws, probe);
    expect(unjailed.output).toContain('CONNECTED hello from the host');
    expect(unjailed.output).toContain('BASH-CONNECTED');
    const before = tcp.connections();

    const jailed = await runIn(jail(), ws, probe);
    expect(jailed.output).toContain('probed');
    expect(jailed.output).toContain('ERROR ECONNREFUSED');
    expect(jailed.output).not.toContain('CONNECTED');
    expect(tcp.connections()).toBe(before);
  });

  it('cannot reach an abstract unix socket of the host', async () => {
    const { ws } = await jailRoot();
    const name = `\0goal-loop-jail-test-${process.pid}`;
    const unix = await listener({ path: name });
    const probe = connectProbe(`{ path: '\\0goal-loop-jail-test-${process.pid}' }`);
    const unjailed = await runIn(new ProcessSandbox(), ws, probe);
    expect(unjailed.output).toContain('CONNECTED hello from the host');
    const before = unix.connections();
    const jailed = await runIn(jail(), ws, probe);
    expect(jailed.output).toMatch(/ERROR (ECONNREFUSED|ENOENT)/);
    expect(unix.connections()).toBe(before);
  });

  it('cannot resolve names: no DNS query leaves the jail, not even to a resolver on the host loopback', async () => {
    const { ws } = await jailRoot();
    let queries = 0;
    const dns: UdpSocket = createSocket('udp4');
    dns.on('message', () => {
      queries += 1;
    });
    await new Promise<void>((resolve) => dns.bind(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => dns.close(() => resolve())));
    const port = dns.address().port;
    const probe = `${nodeScript(
      `const { Resolver } = require('dns').promises; const r = new Resolver({ timeout: 500, tries: 1 }); ` +
        `r.setServers(['127.0.0.1:${port}']); ` +
        `r.resolve4('leak.goal-loop.example').then(() => console.log('RESOLVED'), (e) => console.log('DNS-ERROR', e.code));`,
    )}; getent hosts example.com || echo GETENT-FAILED; test -e /etc/resolv.conf && echo HAS-RESOLV-CONF; cat /proc/net/dev`;

    const unjailed = await runIn(new ProcessSandbox(), ws, probe);
    expect(unjailed.output).toContain('DNS-ERROR');
    expect(queries).toBeGreaterThan(0); // unjailed, the query reaches the host's resolver
    const before = queries;

    const jailed = await runIn(jail(), ws, probe);
    expect(jailed.output).toContain('DNS-ERROR');
    expect(jailed.output).toContain('GETENT-FAILED');
    expect(jailed.output).not.toContain('HAS-RESOLV-CONF');
    expect(queries).toBe(before);
    // The only interface is the jail's own loopback.
    const interfaces = jailed.output
      .split('\n')
      .filter((l) => /^\s*[\w.-]+:\s+\d/.test(l))
      .map((l) => l.trim().split(':')[0]);
    expect(interfaces).toEqual(['lo']);
  });

  it('gives the network only to a request that asks for it (the setup step)', async () => {
    const { ws } = await jailRoot();
    const tcp = await listener({ port: 0, host: '127.0.0.1' });
    const probe = connectProbe(`${tcp.address}, '127.0.0.1'`);
    const sandbox = jail();
    const setup = await runIn(sandbox, ws, probe, { network: true });
    expect(setup.output).toContain('CONNECTED hello from the host');
    const task = await runIn(sandbox, ws, probe, { network: false });
    expect(task.output).not.toContain('CONNECTED');
  });
});
