/**
 * Where compute's memory goes as the services it manages grow (issue 29: ≤ 300 MB at 10,000).
 * Compute runs bundled, as the platform image runs it (deploy/platform/bundle.ts, built
 * here), with the kubernetes cluster against the in-process fake API server serving watches
 * (packages/testing's FakeKubernetes, whose small controller gives each Deployment its pods,
 * Running and Ready, so the pod watch's copy holds them; bench/fake-kubelet.ts makes them the
 * size of a real cluster's, reached through as many updates), on a fresh database of the
 * benchmark's PostgreSQL and NATS (infra.ts). It creates N services over the VPCs through
 * compute's HTTP port as bench/scale.ts does (scale-fleet.ts), waits until all are `running`
 * and a few reconcile passes more, and at 0, N/2 and N prints compute's figures from the probe
 * (memory-probe.ts): resident memory and V8's heap as they are, then heap used after a full
 * collection (compute runs with --expose-gc) — live memory, against resident memory that V8
 * or malloc keep — and the CPU compute used to create and settle each half.
 *
 *   pnpm exec tsx bench/compute-memory-growth.ts
 * Not part of `pnpm bench` (a few minutes, and its figures are compute's alone).
 * Env: PIER_BENCH_GROWTH_SERVICES (1000), PIER_BENCH_GROWTH_VPCS (50),
 * PIER_BENCH_GROWTH_CONCURRENCY (16 creates in flight), PIER_BENCH_GROWTH_KUBELET (on; off:
 * the fake's own small pods, one event each), PIER_BENCH_GROWTH_TLS (on: compute reaches the
 * fake through bench/tls-front.ts, over TLS as it reaches a real API server; off: plain HTTP), PIER_BENCH_GROWTH_SETTLE_SECONDS (10,
 * after all are running), PIER_BENCH_GROWTH_NODE_FLAGS (extra node flags for compute, e.g.
 * `--max-semi-space-size=1`; MALLOC_ARENA_MAX and the like pass through the environment),
 * PIER_BENCH_HEAP_SNAPSHOT=<dir> (a heap snapshot at each point, for
 * `bench/heap-retainers.ts --diff <at 0> <at N>`; writing one grows the process, so the
 * resident figures after the first are not comparable with a run without).
 * PIER_BENCH_GROWTH_RECONCILE=<passes> (0: off): at N, time compute's reconciler as
 * bench/scale.ts does (scale-reconcile.ts): the sweep of every VPC and the passes after it, at
 * a size the test cluster takes 90 minutes to reach (the sweep's reads of the pods come from
 * the watched copy, so what it costs is compute's own: the database and its judging).
 * PIER_BENCH_GROWTH_PROFILE=<file.cpuprofile>: with it, a CPU profile of that full sweep.
 * Then the edge's sync at N (scale-edge.ts): a new compute's first, and those after it.
 * As in bench/scale.ts, compute's log collector is parked (PIER_COMPUTE_LOG_SCAN_MS) and its
 * sweep runs at start-up only.
 */
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, FakeKubernetes, freePort } from '@pier/testing';
import { ServiceProcess } from '../deploy/local/children.ts';
import { bundleServices } from '../deploy/platform/bundle.ts';
import { startInfra } from './infra.ts';
import { createAll, listAll, makeVpcs, servicesPath, type Creation, type Vpc } from './scale-fleet.ts';
import { residentMb } from './scale-processes.ts';
import { snapshot } from './cpu.ts';
import { memoryProbe, probeFigures, type MemoryFigures } from './memory-probe.ts';
import { FakeKubelet } from './fake-kubelet.ts';
import { startTlsFront } from './tls-front.ts';
import { timeComputeReconciler } from './scale-reconcile.ts';
import { timeEdgeSync } from './scale-edge.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const int = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const services = int('PIER_BENCH_GROWTH_SERVICES', 1000);
const vpcCount = int('PIER_BENCH_GROWTH_VPCS', 50);
const concurrency = int('PIER_BENCH_GROWTH_CONCURRENCY', 16);
const settleSeconds = int('PIER_BENCH_GROWTH_SETTLE_SECONDS', 10);
const nodeFlags = (process.env.PIER_BENCH_GROWTH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const snapshotDir = process.env.PIER_BENCH_HEAP_SNAPSHOT ?? '';
const reconcilePasses = int('PIER_BENCH_GROWTH_RECONCILE', 0);
/** An IngressClass no controller serves: compute's edge writes Ingresses, nothing reads them. */
const INGRESS_CLASS = 'pier-bench-none';

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1).padStart(6);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Until every service of the VPCs reads `running` (at most 10 minutes). */
async function allRunning(agent: http.Agent, port: number, vpcs: Vpc[], count: number): Promise<void> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const items: { status: string }[] = [];
    for (const v of vpcs) items.push(...(await listAll(agent, port, v, servicesPath(v))));
    if (items.length >= count && items.every((s) => s.status === 'running')) return;
    if (Date.now() > deadline) throw new Error(`not all ${count} services running after 10 minutes`);
    await sleep(2000);
  }
}

const fake = await new FakeKubernetes({ watch: true }).start();
const kubelet = process.env.PIER_BENCH_GROWTH_KUBELET === 'off' ? undefined : new FakeKubelet(fake);
kubelet?.start();
// Compute reaches the fake over TLS, as it reaches a real API server.
const tls = process.env.PIER_BENCH_GROWTH_TLS === 'off' ? undefined : await startTlsFront(fake.url);
const infra = await startInfra();
const testDb = await createTestDatabase(infra.postgresAdminUrl);
let compute: ServiceProcess | undefined;
try {
  await bundleServices(root);
  const keys = await generateIdentityKeys();
  const port = await freePort();
  let reported: ((f: MemoryFigures) => void) | undefined;
  compute = new ServiceProcess(
    'compute',
    path.join('dist', 'compute.mjs'),
    {
      ...process.env,
      PIER_LOG_LEVEL: 'warn',
      PIER_BIND_HOST: '127.0.0.1',
      PIER_NATS_URL: infra.natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_DATABASE_URL: testDb.urls.compute,
      PIER_COMPUTE_HTTP_PORT: String(port),
      PIER_CLUSTER: 'kubernetes',
      PIER_KUBECONFIG: await fake.writeKubeconfig(tls?.url),
      PIER_COMPUTE_LOG_SCAN_MS: String(86_400_000),
      PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: String(86_400),
      PIER_EDGE_INGRESS_CLASS: INGRESS_CLASS,
      PIER_MEMORY_SNAPSHOT_DIR: snapshotDir,
    },
    `http://127.0.0.1:${port}/healthz`,
    {
      javascript: true,
      nodeArgs: ['--expose-gc', ...memoryProbe, ...nodeFlags],
      onLine: (_name, line) => {
        const figures = probeFigures(line);
        if (figures) reported?.(figures);
        else if (line.trim()) process.stdout.write(`  [compute] ${line.slice(0, 300)}\n`);
      },
    },
  );
  compute.start(root);
  await compute.waitHealthy(90_000);
  const pid = compute.pid!;

  /** The probe's figures (and a heap snapshot, when PIER_BENCH_HEAP_SNAPSHOT names a directory). */
  const probe = async (): Promise<MemoryFigures> => {
    const answer = new Promise<MemoryFigures>((resolve) => (reported = resolve));
    process.kill(pid, 'SIGUSR2');
    return Promise.race([answer, sleep(120_000).then(() => Promise.reject(new Error('no figures from the probe within 120 s')))]);
  };

  const vpcs = await makeVpcs(keys.privateJwk, vpcCount);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  console.log(
    `compute bundled, kubernetes (fake API server with watches${kubelet ? ', pods grown to a real size' : ''}${tls ? ', over TLS' : ''}), ${services} services over ${vpcCount} VPCs; MB (2^20 bytes)`,
  );
  if (nodeFlags.length || process.env.MALLOC_ARENA_MAX)
    console.log(`node flags: ${nodeFlags.join(' ') || 'none'}; MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? 'unset'}`);
  console.log('services    rss   (peak) heapTotal heapUsed | after gc: rss heapUsed heapTotal external arrayBuffers | CPU s   wall s');
  const rows: { services: number; figures: MemoryFigures }[] = [];
  const row = async (count: number, cpuSeconds: number | undefined, wallSeconds: number | undefined) => {
    await sleep(settleSeconds * 1000);
    const peak = (await residentMb(pid))?.peak ?? NaN;
    const f = await probe();
    const c = f.collected;
    rows.push({ services: count, figures: f });
    console.log(
      `${String(count).padStart(8)} ${mb(f.rss)} (${String(peak).padStart(4)}) ${mb(f.heapTotal)}   ${mb(f.heapUsed)}  |        ${c ? `${mb(c.rss)}   ${mb(c.heapUsed)}    ${mb(c.heapTotal)}   ${mb(c.external)}       ${mb(c.arrayBuffers)}` : 'no gc (run without --expose-gc)'} | ${cpuSeconds === undefined ? '     -' : cpuSeconds.toFixed(1).padStart(6)} ${wallSeconds === undefined ? '     -' : wallSeconds.toFixed(1).padStart(6)}${f.file ? `  ${f.file}` : ''}`,
    );
  };

  await row(0, undefined, undefined);
  let made = 0;
  for (const target of [Math.floor(services / 2), services]) {
    const items: Creation[] = [];
    for (let i = made; i < target; i++) items.push({ kind: 'service', index: i });
    const cpu0 = (await snapshot({ compute: pid }, ''))['compute'] ?? 0;
    const t0 = performance.now();
    await createAll(items, { vpcs, computePort: port, databasesPort: 0, concurrency, image: 'pier/tiny-http:1', done: () => made++ });
    await allRunning(agent, port, vpcs, target);
    const cpu = ((await snapshot({ compute: pid }, ''))['compute'] ?? 0) - cpu0;
    await row(target, cpu, (performance.now() - t0) / 1000);
  }
  agent.destroy();
  if (reconcilePasses > 0) {
    const t = await timeComputeReconciler(testDb.urls.compute, await fake.writeKubeconfig(tls?.url), reconcilePasses, process.env.PIER_BENCH_GROWTH_PROFILE);
    const w = t.withSweep;
    console.log(
      `reconciler at ${services}: the sweep of every VPC ${w.ms.toFixed(0)} ms (${w.statements} statements, ${w.clusterCalls} cluster calls); passes after it ${t.passes.map((p) => p.ms.toFixed(0)).join(', ')} ms; pod watch synced in ${t.syncMs.toFixed(0)} ms`,
    );
    const ingressApplies = () => fake.requests.filter((r) => r.method === 'PATCH' && r.path.includes('/ingresses/')).length;
    const e = await timeEdgeSync(
      testDb.urls.compute,
      await fake.writeKubeconfig(tls?.url),
      { ingressClass: INGRESS_CLASS, appsDomain: 'pier.localhost' },
      ingressApplies,
    );
    console.log(
      `edge sync at ${e.routes} routes: a new compute's first ${e.firstMs.toFixed(0)} ms (${e.firstApplies} Ingresses applied), each after it ${e.againMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
    );
  }

  // From 0 the first services also pay for what compute loads and warms on first use (code,
  // pools): the second half's growth is the one per service.
  const [first, half, last] = rows.map((r) => r.figures) as [MemoryFigures, MemoryFigures, MemoryFigures];
  const perThousand = (a: number, b: number, n: number) => ((((b - a) / n) * 1000) / 2 ** 20).toFixed(1);
  const second = services - Math.floor(services / 2);
  const live = (f: MemoryFigures) => f.collected?.heapUsed ?? NaN;
  console.log(
    `growth per 1,000 services, 0 → ${services}: rss ${perThousand(first.rss, last.rss, services)} MB, live heap ${perThousand(live(first), live(last), services)} MB`,
  );
  console.log(
    `growth per 1,000 services, ${Math.floor(services / 2)} → ${services}: rss ${perThousand(half.rss, last.rss, second)} MB, live heap ${perThousand(live(half), live(last), second)} MB`,
  );
  const at = (f: number, from: number, to: number) => mb(f + ((to - from) / second) * (10_000 - services));
  console.log(
    `at 10,000 services, growing as the second half did: rss ${at(last.rss, half.rss, last.rss)} MB, live heap ${at(live(last), live(half), live(last))} MB`,
  );
} finally {
  await compute?.stop();
  kubelet?.stop();
  await tls?.stop();
  await fake.stop();
  await testDb.drop().catch(() => undefined);
  await infra.stop();
}
// As bench/scale.ts does: a run once stayed alive and busy after everything above had stopped
// (a timer of the fake's, by its CPU), and nothing is left to wait for here.
process.exit(0);
