// Elastic services on the docker adapter, for real: the edge container (Caddy), the
// activator in compute, real tiny-http containers. An on_demand service sleeps after its
// idle timeout and wakes on the request that needs it (held, never a 502/503, with
// Server-Timing); 30 requests at once at a sleeping service are all answered; a web
// service autoscales on requests in flight up to exactly max_replicas and back to its
// floor after the scale-down delay, with no failed request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { Resolver } from 'node:dns/promises';
import { IDENTITY_HEADER } from '@pier/kit';
import { adminQuery, openShell, shellUrl, testEdge } from '@pier/testing';
import { docker, startElasticCompute, stopWithEdge, TINY_HTTP, until, type Compute } from './support.ts';
import { defaultBridgeGateway } from '../src/cluster/docker-edge.ts';

const edge = testEdge('apps.elastic.test');
let c: Compute;

interface Answer {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** A request to the edge with the service's Host, as its users send it. */
async function viaEdge(url: string, pathname = '/', headers: Record<string, string> = {}): Promise<Answer> {
  const ip = await edge.ip();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: ip, port: 80, path: pathname, headers: { ...headers, host: new URL(url).hostname }, timeout: 60_000, agent: false },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A command's output (stdout and stderr) in a container. */
async function inContainer(id: string, cmd: string[]): Promise<string> {
  const exec = await docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  const sink = { write: (chunk: Buffer) => chunks.push(chunk) } as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  return Buffer.concat(chunks).toString('utf8');
}

async function service(id: string): Promise<{ status: string; replicas: { desired: number; ready: number }; url: string }> {
  return (await c.get(`${c.base}/${id}`)).body;
}

async function eventsOf(id: string, kind: string): Promise<Record<string, unknown>[]> {
  const rows = await adminQuery(c.db.adminUrl, `select payload from compute.outbox where kind = $1 and payload->>'resource_id' = $2 order by id`, [kind, id]);
  return rows.map((r: { payload: { data: Record<string, unknown> } }) => r.payload.data);
}

async function created(body: Record<string, unknown>): Promise<{ id: string; url: string }> {
  const res = await c.post(c.base, { image: TINY_HTTP, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await until(
    () => service(res.body.id),
    (s) => s.status === 'running' && s.replicas.ready >= 1,
    60_000,
  );
  return res.body;
}

beforeAll(async () => {
  c = await startElasticCompute(edge);
}, 120_000);

afterAll(() => stopWithEdge(c, edge), 60_000);

describe('the elastic fields', () => {
  it('default for on_demand and web services, and are refused where they do not apply', async () => {
    const idle = await c.post(c.base, { name: 'defaults', deployment_mode: 'on_demand' });
    expect(idle.status).toBe(201);
    expect(idle.body).toMatchObject({ min_replicas: 0, idle_timeout_seconds: 900, target_concurrency: 25 });
    const always = await c.post(c.base, { name: 'always', idle_timeout_seconds: 60 });
    expect(always.status).toBe(400);
    expect(always.body.error).toContain('idle_timeout_seconds');
    const worker = await c.post(c.base, { name: 'jobs', service_type: 'worker', target_concurrency: 5 });
    expect(worker.status).toBe(400);
    expect(worker.body.error).toContain('target_concurrency');
    expect((await c.post(c.base, { name: 'short', deployment_mode: 'on_demand', idle_timeout_seconds: 9 })).status).toBe(400);
    expect((await c.post(c.base, { name: 'many', target_concurrency: 1001 })).status).toBe(400);
  });
});

describe('an on_demand service', () => {
  let web: { id: string; url: string };

  beforeAll(async () => {
    web = await created({ name: 'sleepy', deployment_mode: 'on_demand', idle_timeout_seconds: 10 });
  }, 90_000);

  it('starts awake, and sleeps after its idle timeout: scaled, no replica, service.slept', async () => {
    expect((await viaEdge(web.url)).status).toBe(200);
    const asleep = await until(
      () => service(web.id),
      (s) => s.status === 'scaled',
      40_000,
    );
    expect(asleep.replicas).toEqual({ desired: 0, ready: 0 });
    expect((await eventsOf(web.id, 'service.slept')).length).toBe(1);
  }, 60_000);

  it('wakes on the first request, which is held and answered with Server-Timing', async () => {
    await until(
      () => service(web.id),
      (s) => s.status === 'scaled',
      40_000,
    );
    const first = await viaEdge(web.url);
    expect(first.status).toBe(200);
    expect(first.body).toContain('hello from pier/tiny-http');
    expect(first.headers['server-timing']).toMatch(/^wake;dur=\d+$/);
    // The next one finds it awake: no wake in its timing.
    expect((await viaEdge(web.url)).headers['server-timing']).toBeUndefined();
    const awake = await until(
      () => service(web.id),
      (s) => s.status === 'running' && s.replicas.ready === 1,
      20_000,
    );
    expect(awake.replicas).toEqual({ desired: 1, ready: 1 });
    const woken = await eventsOf(web.id, 'service.woken');
    expect(woken.at(-1)).toMatchObject({ replicas: 1 });
  }, 90_000);

  it('answers all of 30 requests arriving at once while it sleeps', async () => {
    await until(
      () => service(web.id),
      (s) => s.status === 'scaled',
      40_000,
    );
    const answers = await Promise.all(Array.from({ length: 30 }, () => viaEdge(web.url)));
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200));
    expect(answers.filter((a) => a.headers['server-timing']).length).toBeGreaterThan(0);
    // One wake for all of them.
    const woken = await eventsOf(web.id, 'service.woken');
    expect(woken.length).toBe(2);
  }, 90_000);

  it('stays awake past its idle timeout while a shell is open, and sleeps once it closed', async () => {
    await until(
      () => service(web.id),
      (s) => s.status === 'running' && s.replicas.ready === 1,
      20_000,
    );
    const slept = (await eventsOf(web.id, 'service.slept')).length;
    const url = shellUrl(`${c.url.replace(/^http/, 'ws')}${c.base}/${web.id}/exec`, { command: ['/bin/sh', '-c', 'echo open; sleep 60'], tty: 'false' });
    const shell = await openShell(url, { [IDENTITY_HEADER]: await c.token('owner') });
    await shell.waitFor('open');
    await new Promise((r) => setTimeout(r, 14_000));
    expect((await service(web.id)).status).toBe('running');
    expect((await eventsOf(web.id, 'service.slept')).length).toBe(slept);
    shell.ws.close();
    await until(
      () => service(web.id),
      (s) => s.status === 'scaled',
      40_000,
    );
  }, 90_000);
});

describe('autoscaling', () => {
  it('scales up to exactly max_replicas on requests in flight and back to the floor, failing no request', async () => {
    const web = await created({ name: 'busy', min_replicas: 1, max_replicas: 3, target_concurrency: 1 });
    const statuses: number[] = [];
    const desired: number[] = [];
    let loading = true;
    // Six clients, each with one slow request in flight at a time: six per one-replica target.
    const clients = Array.from({ length: 6 }, async () => {
      while (loading) statuses.push((await viaEdge(web.url, '/cgi-bin/slow?0.5')).status);
    });
    const top = await until(
      async () => {
        const s = await service(web.id);
        desired.push(s.replicas.desired);
        return s;
      },
      (s) => s.replicas.desired === 3 && s.replicas.ready === 3,
      60_000,
    );
    expect(top.replicas).toEqual({ desired: 3, ready: 3 });
    // Spread over the new replicas too: a few more rounds while all three are ready.
    await new Promise((r) => setTimeout(r, 2_000));
    loading = false;
    await Promise.all(clients);
    // A trickle while it scales down (drained before each replica stops).
    let trickling = true;
    const trickle = (async () => {
      while (trickling) statuses.push((await viaEdge(web.url)).status);
    })();
    const floor = await until(
      async () => {
        const s = await service(web.id);
        desired.push(s.replicas.desired);
        return s;
      },
      (s) => s.replicas.desired === 1,
      60_000,
    );
    trickling = false;
    await trickle;
    expect(floor.replicas.desired).toBe(1);
    expect(Math.max(...desired)).toBe(3);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(statuses.length).toBeGreaterThan(20);
    // The scale-down's event is written once its replicas stopped.
    const scaled = await until(
      () => eventsOf(web.id, 'service.autoscaled'),
      (e) => e.at(-1)?.to === 1,
      20_000,
    );
    expect(scaled.at(0)).toMatchObject({ from: 1 });
    expect(scaled.every((e) => (e.to as number) <= 3)).toBe(true);
    console.info(`autoscaled: ${scaled.map((e) => `${e.from}->${e.to} (${e.reason})`).join('; ')}`);
  }, 150_000);
});

describe('between tenants', () => {
  let front: { id: string; url: string; vpc_id: string };
  let other: { id: string; url: string };

  beforeAll(async () => {
    front = (await created({ name: 'front', deployment_mode: 'on_demand', idle_timeout_seconds: 600 })) as typeof front;
    other = await created({ name: 'other', deployment_mode: 'on_demand', idle_timeout_seconds: 600 });
  }, 120_000);

  it('cannot send a request to another service with headers naming it (the Host alone picks the service)', async () => {
    const spoofed = await viaEdge(front.url, '/cgi-bin/env', {
      'x-pier-service': other.id,
      'x-pier-vpc': front.vpc_id,
      'x-pier-port': '8080',
      'x-pier-health': '/cgi-bin/env',
    });
    expect(spoofed.status).toBe(200);
    // Answered by front's own replica (HOSTNAME is its container's short id).
    const [replica] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${front.id}`], status: ['running'] }) });
    expect(spoofed.body).toMatch(new RegExp(`^HOSTNAME=${replica!.Id.slice(0, 12)}$`, 'm'));
  });

  it("cannot reach the activator on the host from a tenant's replica", async () => {
    // Where the edge finds them: the route DNS on the bridge's gateway, which sends front's host to the activator.
    const gateway = await defaultBridgeGateway(docker);
    const dnsPort = edge.env.PIER_EDGE_ROUTE_DNS_PORT!;
    const resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([`${gateway}:${dnsPort}`]);
    const [target] = await resolver.resolveSrv(new URL(front.url).hostname);
    expect(await resolver.resolve4(target!.name), 'the edge sends elastic services to the activator').toEqual([gateway]);
    const [replica] = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${front.id}`], status: ['running'] }) });
    const probe = (host: string, port: string | number) =>
      inContainer(replica!.Id, [
        '/bin/sh',
        '-c',
        `out=$(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${host} ${port} 2>&1); case "$out" in *HTTP/*) echo REACHED;; *) echo BLOCKED;; esac`,
      ]);
    // The probe works: a service of its own VPC answers it by name.
    expect((await probe('other', '8080')).trim()).toBe('REACHED');
    expect((await probe(gateway, target!.port)).trim()).toBe('BLOCKED');
    // The route DNS (UDP, on the same address) is behind the same rule, which drops every
    // protocol from a VPC's bridge to the host (docker-egress-firewall.ts); the replica's
    // BusyBox has no UDP client to show it with.
  }, 30_000);
});
