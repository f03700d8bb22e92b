// Two compute processes on one database, as two pods of the chart run them. Every loop that
// must run once per installation is led by exactly one live process (a `leader:<name>` lease
// each, kit's leases.ts); a log follow through the process that does not collect gets the
// lines the service prints after it began (the collector publishes each batch on NATS, the
// other process's feed subscribes per followed service); a build queued through the process
// that does not run the queue starts at once (a poke over PostgreSQL's NOTIFY), and a cancel
// sent there stops it; an upload received there is built by the other (through the store);
// a service's requests through the edge are counted once (one collector, under its lease);
// and once the leader is killed, the other takes every loop over.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminQuery,
  createTestDatabase,
  infra,
  isAlive,
  readEventStream,
  removeVpcObjects,
  startGitServer,
  testEdge,
  type GitServer,
  type ServiceProcess,
} from '@pier/testing';
import { ComputeProcess } from './compute-process.ts';
import { archive, buildEnv, site, sleeper, SLEEPING } from './build-support.ts';
import { until, type TestDatabase } from './support.ts';

/** The loops that run once per installation (server.ts's leaderOnly names). */
const LOOPS = ['reconciler', 'claim-expiry', 'log-retention', 'disk-backups', 'builds', 'edge', 'elastic', 'log-collector', 'metrics', 'metrics-rollup'];
const PRINTER = 'i=0; while :; do echo "line $i"; i=$((i+1)); sleep 0.2; done';

const edge = testEdge('apps.two.test');
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
let db: TestDatabase;
let git: GitServer;
let cleanupWork: (() => Promise<void>) | undefined;
let compute: ComputeProcess;
let procs: ServiceProcess[] = [];
let printer: string;

const sql = (query: string, params: unknown[] = []) => adminQuery(db.adminUrl, query, params);
const leader = async (loop: string) =>
  ((await sql(`select holder from compute.leases where name = $1 and expires_at > now()`, [`leader:${loop}`]))[0]?.holder as string | undefined) ?? '';
const pidOf = (holder: string) => Number(/:(\d+):[0-9a-f]+$/.exec(holder)?.[1]);
/** The spawned process (tsx) whose child (compute's node) is `pid`. */
const procOf = (pid: number): ServiceProcess => {
  const parent = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  const found = procs.find((p) => p.child.pid === parent || p.child.pid === pid);
  if (!found) throw new Error(`no spawned process runs pid ${pid}`);
  return found;
};
const other = (p: ServiceProcess) => procs.find((x) => x !== p)!;

async function via(proc: ServiceProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${proc.httpPort}${path}`, {
    method,
    headers: { ...compute.headers(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A service to build into, made through `proc`. */
async function buildTarget(proc: ServiceProcess, name: string): Promise<string> {
  const svc = await via(proc, 'POST', base, { name, port: 8080, health_check_path: '/healthz' });
  expect(svc.status, JSON.stringify(svc.body)).toBe(201);
  return svc.body.id;
}

/** The build at `path`, read through `proc`, once `done` says so. */
const buildOnce = (proc: ServiceProcess, path: string, done: (b: any) => boolean, ms: number) =>
  until(() => via(proc, 'GET', path).then((r) => r.body), done, ms, 100);

/** Every loop led by a live process; the holders by loop. */
async function leaders(except = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const loop of LOOPS) {
    const holder = await until(
      () => leader(loop),
      (h) => h !== '' && h !== except && isAlive(pidOf(h)),
      30_000,
    );
    out.set(loop, holder);
  }
  return out;
}

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  git = await startGitServer();
  await git.createRepo('sleeper');
  await git.commit('sleeper', sleeper(), 'a build that sleeps');
  // The queue's own passes a minute apart: only the poke starts a build at once.
  const builds = await buildEnv(git, { PIER_BUILD_INTERVAL_MS: '60000' });
  cleanupWork = builds.cleanup;
  compute = await ComputeProcess.start(
    db,
    { workspaceId, vpcId },
    {
      ...edge.env,
      ...builds.env,
      PIER_COMPUTE_LOG_FLUSH_MS: '100',
      PIER_COMPUTE_LOG_SCAN_MS: '500',
      PIER_COMPUTE_SSE_KEEPALIVE_MS: '200',
      PIER_COMPUTE_METRICS_SAMPLE_MS: '500',
      PIER_COMPUTE_METRICS_FLUSH_MS: '500',
    },
  );
  const first = compute.current;
  // The second one's route DNS (the docker edge's) on a port of its own, both listening on
  // the bridge; and a work directory of its own, as each pod has.
  const secondWork = await buildEnv(git);
  const cleanupFirst = cleanupWork;
  cleanupWork = async () => {
    await cleanupFirst();
    await secondWork.cleanup();
  };
  const second = await compute.spawn({
    PIER_EDGE_ROUTE_DNS_PORT: String(Number(edge.env.PIER_EDGE_ROUTE_DNS_PORT) + 1),
    PIER_BUILD_WORK_DIR: secondWork.env.PIER_BUILD_WORK_DIR!,
  });
  procs = [first, second];
}, 120_000);

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await removeVpcObjects(vpcId);
  await edge.remove();
  await git?.stop();
  await cleanupWork?.();
  await db?.drop();
}, 120_000);

describe('two instances of compute', () => {
  it('one live process leads each loop that runs once', async () => {
    const held = await leaders();
    for (const [loop, holder] of held) expect(isAlive(pidOf(holder)), loop).toBe(true);
    // One row per loop (the lease's name is its key), each held by one of the two processes.
    const rows = await sql(`select name from compute.leases where name like 'leader:%' and expires_at > now()`);
    expect(rows.map((r) => r.name).sort()).toEqual(LOOPS.map((l) => `leader:${l}`).sort());
  }, 60_000);

  it('a follow through the process that does not collect gets the lines printed after it began', async () => {
    const collector = procOf(pidOf(await leader('log-collector')));
    const follower = other(collector);
    const created = await via(follower, 'POST', base, {
      name: 'printer',
      service_type: 'worker',
      image: 'pier/debian-base:bookworm',
      command: ['sh', '-c', PRINTER],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    printer = created.body.id;
    await until(
      () => via(follower, 'GET', `${base}/${printer}`).then((r) => r.body.status),
      (s) => s === 'running',
      60_000,
    );
    // Lines to read back first.
    await until(
      () => via(follower, 'GET', `${base}/${printer}/logs?limit=5`).then((r) => (r.body.items as unknown[]).length),
      (n) => n > 0,
      20_000,
    );
    const res = await fetch(`http://127.0.0.1:${follower.httpPort}${base}/${printer}/logs?follow=true&limit=1`, { headers: compute.headers() });
    expect(res.status).toBe(200);
    const numberOf = (e: { data: unknown }) => Number(/^line (\d+)$/.exec((e.data as { message: string }).message)?.[1] ?? -1);
    const read = await readEventStream(
      res,
      (r) => {
        const lines = r.events.filter((e) => e.event === 'line');
        // The recent line, then lines printed after it (the follow began meanwhile).
        return lines.length >= 1 && lines.some((e) => numberOf(e) > numberOf(lines[0]!) + 2);
      },
      20_000,
    );
    await res.body?.cancel();
    const numbers = read.events.filter((e) => e.event === 'line').map(numberOf);
    // In order and none twice.
    expect(numbers).toEqual([...numbers].sort((x, y) => x - y));
    expect(new Set(numbers).size).toBe(numbers.length);
  }, 120_000);

  it('a build queued and cancelled through the process that does not run the queue', async () => {
    const runner = procOf(pidOf(await leader('builds')));
    const asked = other(runner);
    const svc = await buildTarget(asked, 'sleepy');
    const queuedAt = Date.now();
    const build = await via(asked, 'POST', `${base}/${svc}/builds/git`, { repo_url: git.url('sleeper') });
    expect(build.status, JSON.stringify(build.body)).toBe(202);
    const path = `${base}/${svc}/builds/${build.body.id}`;
    // Started well before the queue's next pass (a minute): the leader was poked.
    await buildOnce(asked, path, (b) => b.status === 'running', 10_000);
    console.log(`two instances: a build queued through the other process started in ${Date.now() - queuedAt} ms`);
    await until(
      () => via(asked, 'GET', `${path}/logs`).then((r) => String(r.body?.log ?? '')),
      (log) => SLEEPING.test(log),
      90_000,
    );
    const cancelAt = Date.now();
    const cancel = await via(asked, 'POST', `${path}/cancel`);
    expect(cancel.status).toBe(202);
    const ended = await buildOnce(asked, path, (b) => b.status !== 'running', 20_000);
    expect(ended).toMatchObject({ status: 'cancelled', error: 'cancelled', image: null });
    console.log(`two instances: a cancel through the other process stopped the build in ${Date.now() - cancelAt} ms`);
  }, 180_000);

  it('an upload received by the process that does not run the queue is built by the one that does', async () => {
    const runner = procOf(pidOf(await leader('builds')));
    const asked = other(runner);
    const svc = await buildTarget(asked, 'uploaded');
    const body = await archive(Object.entries(site(`uploaded-${randomUUID()}`)).map(([name, content]) => ({ name, content })));
    const res = await fetch(`http://127.0.0.1:${asked.httpPort}${base}/${svc}/builds/source-upload?deploy=false`, {
      method: 'POST',
      headers: { ...compute.headers(), 'content-type': 'application/gzip' },
      body: new Uint8Array(body),
    });
    expect(res.status).toBe(202);
    const build = (await res.json()) as { id: string };
    const done = await buildOnce(asked, `${base}/${svc}/builds/${build.id}`, (b) => ['succeeded', 'failed', 'cancelled'].includes(b.status), 120_000);
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'succeeded' });
    // The source went through the store, and is gone from it once built.
    expect(await sql('select build_id from compute.build_sources')).toEqual([]);
  }, 180_000);

  it("counts a service's requests through the edge once, whichever process is asked", async () => {
    const [a, b] = procs as [ServiceProcess, ServiceProcess];
    const web = await via(a, 'POST', base, { name: 'counted', image: 'pier/tiny-http:1' });
    expect(web.status, JSON.stringify(web.body)).toBe(201);
    const host = new URL(web.body.url).hostname;
    await until(
      () => edge.get(host).catch(() => ({ status: 0 })),
      (r) => r.status === 200,
      60_000,
    );
    const total = async (p: ServiceProcess) => ((await via(p, 'GET', `${base}/${web.body.id}/metrics`)).body.totals.requests as number | null) ?? 0;
    // What the readiness wait sent, once written (flushes every 500 ms).
    await new Promise((r) => setTimeout(r, 2000));
    const before = await total(a);
    for (let i = 0; i < 10; i++) await edge.get(host, '/');
    await until(
      () => total(b),
      (n) => n >= before + 10,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 2000));
    expect(await total(a)).toBe(before + 10);
    expect(await total(b)).toBe(before + 10);
  }, 90_000);

  it('the leader killed, the other takes every loop over and collects the lines', async () => {
    const before = await leaders();
    const holder = before.get('log-collector')!;
    const victim = procOf(pidOf(holder));
    const survivor = other(victim);
    process.kill(pidOf(holder), 'SIGKILL');
    const t0 = Date.now();
    await victim.exited;
    const after = await leaders(holder);
    console.log(`two instances: every loop led by the survivor ${Date.now() - t0} ms after its leader was killed`);
    for (const [loop, h] of after) expect(procOf(pidOf(h)), loop).toBe(survivor);
    procs = [survivor];
    // The survivor collects: history holds lines printed after the kill.
    const killedAt = new Date(t0).toISOString();
    await until(
      () =>
        via(survivor, 'GET', `${base}/${printer}/logs/history?start=${encodeURIComponent(killedAt)}&limit=10`).then((r) => (r.body.items as unknown[]).length),
      (n) => n > 0,
      30_000,
    );
  }, 120_000);
});
