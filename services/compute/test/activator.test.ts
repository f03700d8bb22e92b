// The activator on its own (src/edge/activator.ts), with real HTTP servers on loopback as
// the replicas: what it does with requests while a service wakes, drains or holds a
// WebSocket, without Docker in the way (elastic-docker.test.ts runs it behind the real
// edge with real containers).
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { createLogger } from '@pier/kit';
import { Activator, type ActivatorTarget, type ReplicaAddress } from '../src/edge/activator.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A replica: an HTTP server on 127.0.0.1 that answers after `delayMs`, with what it saw. */
async function replica(port = 0, delayMs = 0): Promise<{ port: number; seen: http.IncomingHttpHeaders[]; server: http.Server }> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    setTimeout(() => res.end(`from ${port}`), Number(new URL(req.url!, 'http://x').searchParams.get('delay') ?? delayMs));
  });
  server.on('upgrade', (_req, socket: net.Socket) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d) => socket.write(d));
    socket.on('end', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
  return { port: (server.address() as net.AddressInfo).port, seen, server };
}

const serviceId = randomUUID();
const vpcId = randomUUID();

/** The routing table of these tests: `p<port>.apps.test` is the service, its replicas listening on that port. */
function route(host: string): ActivatorTarget | null {
  const m = /^p(\d+)\.apps\.test$/.exec(host);
  return m ? { serviceId, vpcId, port: Number(m[1]), healthPath: null } : null;
}

async function activatorWith(list: () => ReplicaAddress[], wake: () => Promise<boolean> = async () => false, holdMs = 5_000) {
  const activator = new Activator({ list: async () => list(), route, wake, holdMs, logger: createLogger('activator-test', 'silent') });
  const port = await activator.listen('127.0.0.1');
  cleanups.push(() => activator.close());
  return { activator, port };
}

function send(activatorPort: number, replicaPort: number, path = '/', extra: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: activatorPort,
        path,
        agent: false,
        headers: { host: `p${replicaPort}.apps.test`, ...extra },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the activator', () => {
  it('holds requests for a sleeping service, asks for one wake, and answers them all with Server-Timing', async () => {
    const free = await replica();
    await new Promise<void>((r) => free.server.close(() => r()));
    let running: ReplicaAddress[] = [];
    let wakes = 0;
    const { port } = await activatorWith(
      () => running,
      async () => {
        wakes++;
        // The container takes a while to start listening.
        await new Promise((r) => setTimeout(r, 200));
        await replica(free.port);
        running = [{ id: 'c0', index: 0, address: '127.0.0.1' }];
        return true;
      },
    );
    const answers = await Promise.all(Array.from({ length: 10 }, () => send(port, free.port)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(wakes).toBe(1);
    for (const a of answers) expect(Number(/^wake;dur=(\d+)$/.exec(String(a.headers['server-timing']))?.[1])).toBeGreaterThanOrEqual(200);
    // Awake: no wake in the timing any more.
    expect((await send(port, free.port)).headers['server-timing']).toBeUndefined();
  });

  it('calls it a wake when the wake is recorded only after its replica already answers (the CI race)', async () => {
    const up = await replica();
    let running: ReplicaAddress[] = [];
    const { port } = await activatorWith(
      () => running,
      async () => {
        running = [{ id: 'c0', index: 0, address: '127.0.0.1' }];
        // The count's transaction, after the container listens and the probe saw it.
        await new Promise((r) => setTimeout(r, 150));
        return true;
      },
    );
    expect((await send(port, up.port)).headers['server-timing']).toMatch(/^wake;dur=\d+$/);
  });

  it('finds the service by Host alone: a port or capitals change nothing, and no header a client sends picks one', async () => {
    const up = await replica();
    const { activator, port } = await activatorWith(() => [{ id: 'p0', index: 0, address: '127.0.0.1' }]);
    expect((await send(port, up.port, '/', { host: `P${up.port}.Apps.test:443` })).status).toBe(200);
    const spoofed = { 'x-pier-service': serviceId, 'x-pier-vpc': vpcId, 'x-pier-port': String(up.port) };
    expect((await send(port, up.port, '/', { host: 'other.apps.test', ...spoofed })).status).toBe(404);
    expect(activator.traffic(serviceId).lastActiveAt).toBeGreaterThan(0);
  });

  it('waits for a replica that is not ready yet without calling it a wake', async () => {
    const free = await replica();
    await new Promise<void>((r) => free.server.close(() => r()));
    const { port } = await activatorWith(() => [{ id: 'c0', index: 0, address: '127.0.0.1' }]);
    setTimeout(() => void replica(free.port), 150);
    const r = await send(port, free.port);
    expect(r.status).toBe(200);
    expect(r.headers['server-timing']).toBeUndefined();
  });

  it('answers 503 once the hold runs out with no replica, and forwards the headers as they came (the edge adds none to pick a service)', async () => {
    const { port } = await activatorWith(() => [], undefined, 300);
    const r = await send(port, 9);
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('5');
    const up = await replica();
    const { port: p2 } = await activatorWith(() => [{ id: 'c0', index: 0, address: '127.0.0.1' }]);
    expect((await send(p2, up.port, '/', { 'x-pier-spoofed': 'yes' })).status).toBe(200);
    expect(up.seen[0]).toMatchObject({ 'x-pier-spoofed': 'yes', host: `p${up.port}.apps.test` });
  });

  it('counts requests in flight, and a drain waits for those of the replicas it takes away', async () => {
    const b = await replica();
    const { activator, port } = await activatorWith(() => [{ id: 'c1', index: 1, address: '127.0.0.1' }]);
    const slow = send(port, b.port, '/?delay=600');
    await new Promise((r) => setTimeout(r, 150));
    expect(activator.traffic(serviceId)).toMatchObject({ inFlight: 1, peak: 1 });
    const t = Date.now();
    await activator.drain(serviceId, 1);
    expect(Date.now() - t).toBeGreaterThanOrEqual(300);
    expect((await slow).status).toBe(200);
    expect(activator.traffic(serviceId)).toMatchObject({ inFlight: 0 });
    // Once the scale finished, the listing is read afresh and the replica takes requests again.
    activator.scaled(serviceId);
    expect((await send(port, b.port)).status).toBe(200);
  });

  it('keeps a WebSocket in flight until it closes', async () => {
    const up = await replica();
    const { activator, port } = await activatorWith(() => [{ id: 'c0', index: 0, address: '127.0.0.1' }]);
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`GET /ws HTTP/1.1\r\nHost: p${up.port}.apps.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`);
    const first = await new Promise<string>((r) => socket.once('data', (d) => r(d.toString())));
    expect(first).toContain('101 Switching Protocols');
    socket.write('ping');
    expect(await new Promise<string>((r) => socket.once('data', (d) => r(d.toString())))).toBe('ping');
    expect(activator.traffic(serviceId).inFlight).toBe(1);
    socket.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect(activator.traffic(serviceId).inFlight).toBe(0);
  });
});
