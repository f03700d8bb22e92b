// Workers autoscale on CPU on the docker adapter, for real: the controller reads their
// replicas' CPU through the Engine API's stats and scales a busy worker (a shell loop using
// all of the 0.25 core svc.nano gives it) up to exactly max_replicas, and back to its floor
// after the scale-down delay once the load stopped; an idle worker with the same bounds
// stays at its floor. The edge runs because the elastic controller runs only beside it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminQuery, testEdge } from '@pier/testing';
import { docker, startElasticCompute, stopWithEdge, TINY_HTTP, until, type Compute } from './support.ts';

const edge = testEdge('apps.elastic-worker.test');
let c: Compute;

// The load runs in a child, so `kill -9 -1` in a shell ends it and leaves the replica idle, not gone.
const BUSY = ['sh', '-c', 'sh -c "while :; do :; done" & wait; while :; do sleep 3600; done'];
const IDLE = ['sh', '-c', 'while :; do sleep 3600; done'];

interface Read {
  status: string;
  replicas: { desired: number; ready: number };
}

async function read(id: string): Promise<Read> {
  return (await c.get(`${c.base}/${id}`)).body;
}

async function autoscaled(id: string): Promise<{ from: number; to: number; reason: string }[]> {
  const rows = await adminQuery(
    c.db.adminUrl,
    `select payload from compute.outbox where kind = 'service.autoscaled' and payload->>'resource_id' = $1 order by id`,
    [id],
  );
  return rows.map((r: { payload: { data: { from: number; to: number; reason: string } } }) => r.payload.data);
}

async function running(id: string): Promise<string[]> {
  const list = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${id}`], status: ['running'] }) });
  return list.map((r) => r.Id);
}

async function worker(name: string, command: string[]): Promise<string> {
  const res = await c.post(c.base, { name, image: TINY_HTTP, service_type: 'worker', command, min_replicas: 1, max_replicas: 3 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toMatchObject({ instance_type: 'svc.nano', target_concurrency: null, port: null });
  return res.body.id;
}

beforeAll(async () => {
  c = await startElasticCompute(edge);
}, 120_000);

afterAll(() => stopWithEdge(c, edge), 60_000);

describe('a worker with max_replicas', () => {
  it('scales on CPU up to exactly max_replicas, back to its floor once the load stopped; an idle one stays at its floor', async () => {
    const [busy, idle] = await Promise.all([worker('crunch', BUSY), worker('waits', IDLE)]);
    const started = Date.now();
    const top = await until(
      () => read(busy),
      (s) => s.replicas.desired === 3 && s.replicas.ready === 3,
      45_000,
    );
    console.info(`busy worker: 3 replicas ready ${((Date.now() - started) / 1000).toFixed(1)} s after its creation`);
    expect(top.status).toBe('running');
    // Two more reads at three: still all busy, and never a fourth.
    await new Promise((r) => setTimeout(r, 4_500));
    expect((await read(busy)).replicas).toEqual({ desired: 3, ready: 3 });
    expect(await running(busy)).toHaveLength(3);
    const up = await autoscaled(busy);
    expect(up.at(0)).toMatchObject({ from: 1 });
    expect(up.at(-1)).toMatchObject({ to: 3 });
    expect(up.every((e) => e.to > e.from && e.to <= 3)).toBe(true);
    expect(up.at(-1)!.reason).toMatch(/^average CPU \d+% of the CPU given \(target 80%\) over [12] replicas?$/);
    // The idle one was read all along (about ten times) and never moved.
    expect((await read(idle)).replicas).toEqual({ desired: 1, ready: 1 });
    expect(await autoscaled(idle)).toEqual([]);

    for (const id of await running(busy)) {
      const exec = await docker.getContainer(id).exec({ Cmd: ['sh', '-c', 'kill -9 -1'], AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({});
      stream.resume();
      await new Promise((r) => stream.on('end', r));
    }
    const stopped = Date.now();
    const floor = await until(
      () => read(busy),
      (s) => s.replicas.desired === 1 && s.replicas.ready === 1,
      30_000,
    );
    console.info(`busy worker, load stopped: back to 1 replica ${((Date.now() - stopped) / 1000).toFixed(1)} s later (delay 3 s)`);
    expect(floor.status).toBe('running');
    expect(await running(busy)).toHaveLength(1);
    // The scale-down's event is written once its replicas stopped.
    const all = await until(
      () => autoscaled(busy),
      (e) => e.at(-1)?.to === 1,
      15_000,
    );
    expect(all.at(-1)).toMatchObject({ from: 3, to: 1 });
    expect(all.at(-1)!.reason).toMatch(/^average CPU \d+% of the CPU given \(target 80%\) over 3 replicas; fewer replicas wanted for 3 s$/);
    console.info(`autoscaled: ${all.map((e) => `${e.from}->${e.to} (${e.reason})`).join('; ')}`);
    expect(await autoscaled(idle)).toEqual([]);
  }, 150_000);
});
