/**
 * At scale (issue 29): compute and databases managing far more than this machine can run,
 * on deploy/kube/cluster.sh's real Kubernetes (start it first) whose pods land on kwok's
 * fake nodes (bench/kwok-nodes.ts): they go through the real API server, scheduler and
 * controllers, and read Running and Ready, but no container starts. Compute and databases
 * run as processes of their own, bundled as the platform image runs them
 * (deploy/platform/bundle.ts, built first), each on its schema of one fresh
 * database of the benchmark's PostgreSQL; requests go straight to their HTTP ports with
 * identity tokens signed here, one per VPC (bench/scale-fleet.ts). It creates the services
 * and databases, many at a time, spread over the VPCs with a full page of 200 of each in
 * one of them, and prints, on lines starting `scale:`:
 *   - resident memory of compute, databases and PostgreSQL at 0, 1,000 and all services
 *     (databases created in step, in proportion), right after creating and after a rest (the
 *     goal is read at rest), the create rate, and the CPU each process
 *     (the cluster's own included) used meanwhile;
 *   - a page of 200 listed with live status, one request at a time: p50, p95, cluster calls;
 *   - compute's reconcile pass and sweep (bench/scale-reconcile.ts), with their statements and calls;
 *   - a pod killed: when a read of its service shows it, and whether an event says so;
 *   - what one scan of compute's log collector lists (the collector is parked here, below).
 *
 * Settings that differ from a production install, and why:
 *   - the log collector scans once a day (PIER_COMPUTE_LOG_SCAN_MS): fake pods have no log
 *     to follow, and every scan would send one failing log request per pod to the API server;
 *   - Ingresses name a class no controller serves, so the cluster's Traefik (shared with
 *     other users) is not loaded with thousands of routes; compute still writes them;
 *   - compute's own sweep runs at start-up only (PIER_COMPUTE_SWEEP_INTERVAL_SECONDS), not
 *     to race the sweep timed here;
 *   - databases use StorageClass kwok-volume (claims bound by kwok, no disk), built in (no operator).
 *
 * Run it when nobody else uses the cluster: while it runs, every pod created there, anyone's,
 * lands on a fake node. A run stopped by SIGINT or SIGTERM still cleans up, uncordoning first.
 * `benchScale()` is section `scale` of `pnpm bench`, never run by default:
 *   deploy/kube/cluster.sh start --user $$ && PIER_BENCH_ONLY=scale pnpm bench
 * Env: PIER_BENCH_SCALE_SERVICES (10000), PIER_BENCH_SCALE_DATABASES (2000),
 * PIER_BENCH_SCALE_VPCS (500), PIER_BENCH_SCALE_CONCURRENCY (24 creates in flight),
 * PIER_BENCH_SCALE_LISTS (100 timed lists of each kind), PIER_BENCH_SCALE_FAKE_NODES (4),
 * PIER_BENCH_SCALE_REST_SECONDS (30: memory is read right after creating, and again at rest),
 * PIER_TEST_KUBECONFIG (default /tmp/pier-kube/kubeconfig), PIER_BENCH_SCALE_LOG (every line
 * the services print; default a file under the system's temporary directory).
 */
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateIdentityKeys, vpcNamespace } from '@pier/kit';
import { createTestDatabase, freePort, realKubernetes, type RealKubernetes, type TestDatabase } from '@pier/testing';
import { ServiceProcess } from '../deploy/local/children.ts';
import { POD_SELECTOR } from '../services/compute/src/cluster/kubernetes-manifests.ts';
import { SELECTOR as DATABASE_SELECTOR } from '../services/databases/src/cluster/kubernetes-meta.ts';
import { startInfra, type Infra } from './infra.ts';
import { bundleServices } from '../deploy/platform/bundle.ts';
import { KWOK_STORAGE_CLASS, startFakeNodes, type FakeNodes } from './kwok-nodes.ts';
import { PAGE, call, createAll, databasesPath, makeVpcs, servicesPath, listAll, type Creation, type Vpc } from './scale-fleet.ts';
import { timeComputeReconciler } from './scale-reconcile.ts';
import { cpuBetween, cpuNow, memoryLine, residentMb } from './scale-processes.ts';
import { killedPod } from './scale-change.ts';
import { callsOf, clusterTime } from './scale-metrics.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const IMAGE = 'pier/tiny-http:1';
const int = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

const tally = (xs: string[]) =>
  Object.entries(xs.reduce<Record<string, number>>((t, x) => ({ ...t, [x]: (t[x] ?? 0) + 1 }), {}))
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');

export async function benchScale(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<void> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const services = int('PIER_BENCH_SCALE_SERVICES', 10_000);
  const databases = int('PIER_BENCH_SCALE_DATABASES', 2000);
  const vpcCount = int('PIER_BENCH_SCALE_VPCS', 500);
  const concurrency = int('PIER_BENCH_SCALE_CONCURRENCY', 24);
  const lists = int('PIER_BENCH_SCALE_LISTS', 100);
  const restSeconds = int('PIER_BENCH_SCALE_REST_SECONDS', 30);
  process.env.PIER_TEST_KUBECONFIG ??= '/tmp/pier-kube/kubeconfig';
  const kube = realKubernetes();
  const infra = opts.infra ?? (await startInfra());
  const started = performance.now();
  let vpcs: Vpc[] = [];
  let testDb: TestDatabase | undefined;
  let fake: FakeNodes | undefined;
  const processes: ServiceProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  let cleaning: Promise<void> | undefined;
  // Once, from the end of the run or from a signal: a run stopped half way must not leave
  // the shared cluster's node cordoned, nor its processes (their own process groups) running.
  const cleanUp = () =>
    (cleaning ??= (async () => {
      const t = performance.now();
      await fake?.uncordon().catch((err: unknown) => log(`  clean-up: uncordon: ${String(err)}`));
      agent.destroy();
      // The services first (nothing recreates what goes), then the VPCs' namespaces, while kwok still finishes their pods.
      for (const p of [...processes].reverse()) await p.stop();
      for (const v of vpcs) await kube.deleteNamespace(vpcNamespace(v.vpcId)).catch(() => undefined);
      if (fake) {
        await podsGone(kube, fake.names, new Set(vpcs.map((v) => vpcNamespace(v.vpcId))), 300_000).catch((err: unknown) => log(`  clean-up: ${String(err)}`));
        await fake.stop().catch((err: unknown) => log(`  clean-up of kwok: ${String(err)}`));
      }
      await testDb?.drop().catch(() => undefined);
      log(`  cleaned up in ${((performance.now() - t) / 1000).toFixed(0)} s; the whole run took ${((performance.now() - started) / 60_000).toFixed(1)} min`);
      if (!opts.infra) await infra.stop();
    })());
  const interrupted = (signal: NodeJS.Signals) => {
    log(`  ${signal}: cleaning up before leaving`);
    // The process ends here, so the caller's finally (its PostgreSQL and NATS) never runs: stopped here too.
    void cleanUp()
      .then(() => opts.infra?.stop())
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    log(`pier bench — at scale: ${services} services and ${databases} databases over ${vpcCount} VPCs, on kubernetes with kwok's fake nodes`);
    testDb = await createTestDatabase(infra.postgresAdminUrl);
    // Capacity for every pod's requests (svc.nano: 0.25 CPU, 256 MiB), with room to spare.
    fake = await startFakeNodes(kube, {
      root,
      count: int('PIER_BENCH_SCALE_FAKE_NODES', 4),
      capacity: { cpu: '10k', memory: '16Ti', pods: '110000' },
      log,
    });

    const keys = await generateIdentityKeys();
    const [computePort, databasesPort] = [await freePort(), await freePort()];
    // What the services logged (warnings and worse): the first lines and the last, and how
    // many; every line also goes to a file, which outlives a run stopped half way.
    const warnings = { first: [] as string[], last: [] as string[], count: 0 };
    const logFile = process.env.PIER_BENCH_SCALE_LOG ?? path.join(os.tmpdir(), `pier-scale-${process.pid}.log`);
    const logStream = createWriteStream(logFile, { flags: 'a' });
    log(`  the services' output: ${logFile}`);
    const onExit = (service: string, code: number | null, signal: NodeJS.Signals | null) => {
      if (!cleaning) log(`  ${service} exited (code ${code}, signal ${signal}); its last lines are in ${logFile}`);
    };
    const onLine = (service: string, line: string) => {
      logStream.write(`${new Date().toISOString()} [${service}] ${line}\n`);
      const entry = `[${service}] ${line.slice(0, 300)}`;
      warnings.count++;
      if (warnings.first.length < 10) warnings.first.push(entry);
      else warnings.last = [...warnings.last.slice(-9), entry];
    };
    const common = {
      ...process.env,
      PIER_LOG_LEVEL: 'warn',
      PIER_BIND_HOST: '127.0.0.1',
      PIER_NATS_URL: infra.natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_CLUSTER: 'kubernetes',
      PIER_KUBECONFIG: kube.kubeconfig,
    };
    // Bundled and run with plain node, as the platform image runs them: memory as in production.
    await bundleServices(root);
    const compute = new ServiceProcess(
      'compute',
      path.join('dist', 'compute.mjs'),
      {
        ...common,
        PIER_DATABASE_URL: testDb.urls.compute,
        PIER_COMPUTE_HTTP_PORT: String(computePort),
        PIER_COMPUTE_LOG_SCAN_MS: String(86_400_000),
        PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: String(86_400),
        PIER_EDGE_INGRESS_CLASS: 'pier-bench-none',
      },
      `http://127.0.0.1:${computePort}/healthz`,
      { onLine, onExit, javascript: true },
    );
    const databasesService = new ServiceProcess(
      'databases',
      path.join('dist', 'databases.mjs'),
      {
        ...common,
        PIER_DATABASE_URL: testDb.urls.databases,
        PIER_DATABASES_HTTP_PORT: String(databasesPort),
        PIER_DATABASES_KUBERNETES_OPERATOR: 'none',
        PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE: 'NodePort',
        PIER_DATABASES_STORAGE_CLASS: KWOK_STORAGE_CLASS,
      },
      `http://127.0.0.1:${databasesPort}/healthz`,
      { onLine, onExit, javascript: true },
    );
    for (const p of [compute, databasesService]) {
      processes.push(p);
      p.start(root);
      await p.waitHealthy(90_000);
    }
    vpcs = await makeVpcs(keys.privateJwk, vpcCount);
    const memory = (made: number, dbs: number, when?: string) => memoryLine({ compute: compute.pid!, databases: databasesService.pid! }, made, dbs, when);
    log(await memory(0, 0));

    // ---- create, in stages ending at each memory checkpoint ----
    let made = { service: 0, database: 0 };
    const t0 = performance.now();
    let creating = 0;
    const database = new URL(testDb.adminUrl).pathname.slice(1);
    const cpu = () => cpuNow({ compute: compute.pid, databases: databasesService.pid, kwok: fake!.pid }, kube.kubeconfig, database);
    const cpuBefore = await cpu();
    for (const target of [...new Set([1000, services].filter((n) => n <= services))]) {
      const dbTarget = Math.round((target * databases) / Math.max(1, services));
      const items: Creation[] = [];
      for (let i = made.service; i < target; i++) items.push({ kind: 'service', index: i });
      for (let i = made.database; i < dbTarget; i++) items.push({ kind: 'database', index: i });
      // Databases in step with services, not all at the end.
      items.sort((a, b) => a.index / (a.kind === 'service' ? services : databases) - b.index / (b.kind === 'service' ? services : databases));
      const c0 = performance.now();
      await createAll(items, {
        vpcs,
        computePort,
        databasesPort,
        concurrency,
        image: IMAGE,
        done: (c) => {
          made = { ...made, [c.kind]: made[c.kind] + 1 };
          if (c.kind === 'service' && made.service % 1000 === 0) {
            const s = (performance.now() - t0) / 1000;
            log(`  ${made.service} services, ${made.database} databases created in ${s.toFixed(1)} s (${(made.service / s).toFixed(1)} services/s)`);
          }
        },
      });
      creating += performance.now() - c0;
      const settle = await settled(agent, vpcs, computePort, databasesPort, target);
      log(
        `  after ${((performance.now() - t0) / 1000).toFixed(0)} s: services ${settle.services}; databases ${settle.databases}${settle.message ? ` (one says: ${settle.message})` : ''}`,
      );
      // Right after creating (and the settling reads above), the heap holds what they
      // allocated until V8 collects it; at rest is what the services hold.
      log(await memory(made.service, made.database, 'right after creating'));
      await new Promise((resolve) => setTimeout(resolve, restSeconds * 1000));
      log(await memory(made.service, made.database, `after ${restSeconds} s at rest`));
    }
    log(
      `scale: created ${made.service} services and ${made.database} databases in ${(creating / 1000).toFixed(0)} s (${((1000 * (made.service + made.database)) / creating).toFixed(1)} creates/s with ${concurrency} in flight)`,
    );
    log(`  CPU used since the first create (creates, settling, reads): ${cpuBetween(cpuBefore, await cpu())}`);
    const computeMb = await residentMb(compute.pid!);
    if (computeMb) log(`  compute at ${made.service} services, at rest: ${computeMb.now} MB  (goal ≤ 300 MB: ${computeMb.now <= 300 ? 'met' : 'MISSED'})`);

    log(`  compute's cluster time so far: ${await clusterTime(computePort)}`);
    log(`  databases' cluster time so far: ${await clusterTime(databasesPort)}`);

    // ---- a page of 200 with live status, in the big VPC ----
    const big = vpcs[0]!;
    const ns = vpcNamespace(big.vpcId);
    const q = (selector: string) => `labelSelector=${encodeURIComponent(selector)}`;
    for (const [what, port, listPath, count, apiPaths] of [
      ['services', computePort, servicesPath(big), services, [`/api/v1/namespaces/${ns}/pods?${q(POD_SELECTOR)}`]],
      [
        'databases',
        databasesPort,
        databasesPath(big),
        databases,
        [`/apis/apps/v1/namespaces/${ns}/statefulsets?${q(DATABASE_SELECTOR)}`, `/api/v1/namespaces/${ns}/pods?${q(DATABASE_SELECTOR)}`],
      ],
    ] as const) {
      const url = `${listPath}?limit=${PAGE}`;
      const observesBefore = what === 'databases' ? await callsOf(databasesPort, 'cluster.observe') : 0;
      for (let i = 0; i < 10; i++) await call(agent, port, big, 'GET', url);
      const ms: number[] = [];
      const calls = new Set<number>();
      let size = 0;
      for (let i = 0; i < lists; i++) {
        const r = await call(agent, port, big, 'GET', url);
        if (r.status !== 200) throw new Error(`list ${what}: ${r.status} ${JSON.stringify(r.body)}`);
        ms.push(r.ms);
        calls.add(r.clusterCalls);
        size = r.body.items.length;
      }
      ms.sort((a, b) => a - b);
      // Databases report no call count per response: their adapter's observe calls, from /metrics.
      const callsText =
        what === 'services'
          ? `${[...calls].join(', ')} cluster calls per list`
          : `${(((await callsOf(databasesPort, 'cluster.observe')) - observesBefore) / (lists + 10)).toFixed(2)} observe per list, each from the watched copies of StatefulSets and Pods while they are connected, else two lists; the reconciler's observes of databases being created included`;
      const p50 = percentile(ms, 0.5);
      log(
        `scale: list ${size} of ${count} ${what} p50 ${p50.toFixed(1)} ms p95 ${percentile(ms, 0.95).toFixed(1)} ms (${callsText})  (goal ≤ 50 ms: ${p50 <= 50 ? 'met' : 'MISSED'})`,
      );
      // The same cluster reads on their own, raw JSON straight from the API server: what is Pier's and what the cluster's.
      const raw: number[] = [];
      for (let i = 0; i < 30; i++) {
        const r0 = performance.now();
        for (const apiPath of apiPaths) await kube.request('GET', apiPath);
        raw.push(performance.now() - r0);
      }
      raw.sort((a, b) => a - b);
      log(`  of which the API server's ${apiPaths.length > 1 ? 'lists' : 'list'} of the VPC alone (raw JSON): p50 ${percentile(raw, 0.5).toFixed(1)} ms`);
    }

    // ---- compute's reconcile pass and sweep ----
    const timings = await timeComputeReconciler(testDb.urls.compute, kube.kubeconfig, 5);
    const passMs = [...timings.passes.map((p) => p.ms)].sort((a, b) => a - b);
    const pass = percentile(passMs, 0.5);
    const p = timings.passes[timings.passes.length - 1]!;
    const w = timings.withSweep;
    log(
      `scale: reconcile pass with its sweep of the VPCs that changed ${pass.toFixed(0)} ms, the sweep of every VPC ${w.ms.toFixed(0)} ms at ${services} services  (goal ≤ 1 s each: pass ${pass <= 1000 ? 'met' : 'MISSED'}, full sweep ${w.ms <= 1000 ? 'met' : 'MISSED'})`,
    );
    log(
      `  a pass: ${p.statements} statements, ${p.clusterCalls} cluster calls; the pass sweeping every VPC: ${w.statements} statements, ${w.clusterCalls} cluster calls (${vpcCount} VPCs); the pod watch's first copy took ${timings.syncMs.toFixed(0)} ms`,
    );

    // ---- a pod killed ----
    for (const line of await killedPod({ kube, agent, computePort, natsUrl: infra.natsUrl, vpcs })) log(line);

    // ---- what the parked log collector would list every scan ----
    const l0 = performance.now();
    const pods = await kube.request('GET', `/api/v1/pods?labelSelector=${encodeURIComponent(POD_SELECTOR)}`);
    const bytes = Buffer.byteLength(JSON.stringify(pods.body));
    log(
      `scale: log collector's scan (parked in this run; every 5 s by default): its list of every service pod: ${pods.body.items.length} pods, ${(bytes / 2 ** 20).toFixed(1)} MB, ${(performance.now() - l0).toFixed(0)} ms`,
    );
    if (warnings.count)
      log(`  the services logged ${warnings.count} lines at warn or above; the first and last:\n    ${[...warnings.first, ...warnings.last].join('\n    ')}`);
    log(`  kwok's log: ${fake.logFile}`);
  } finally {
    await cleanUp();
    process.removeListener('SIGINT', interrupted);
    process.removeListener('SIGTERM', interrupted);
  }
}

/** Statuses a service rests in: its rollout is over, one way or the other. */
const SETTLED = new Set(['running', 'crashed', 'scaled']);

/**
 * Waits (at most 10 minutes) until all `target` services have settled, then tallies both
 * kinds (non-running ones with their first message). Reading them is what `pier` would do.
 */
async function settled(agent: http.Agent, vpcs: Vpc[], computePort: number, databasesPort: number, target: number) {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const items: { status: string; status_message?: string }[] = [];
    for (const v of vpcs) items.push(...(await listAll(agent, computePort, v, servicesPath(v))));
    if ((items.length >= target && items.every((s) => SETTLED.has(s.status))) || Date.now() > deadline) {
      const dbs: { status: string; status_reason?: string }[] = [];
      for (const v of vpcs) dbs.push(...(await listAll(agent, databasesPort, v, databasesPath(v))));
      const odd = [...items.map((s) => s.status_message), ...dbs.map((d) => d.status_reason)].find((m) => m);
      return {
        services: tally(items.map((s) => s.status)),
        databases: tally(dbs.map((d) => d.status)) || 'none',
        message: odd ?? null,
      };
    }
    await new Promise((r) => setTimeout(r, 10_000));
  }
}

/** Until no pod of the benchmark's namespaces is left on kwok's nodes (kwok finishes the deleted namespaces' pods). */
async function podsGone(kube: RealKubernetes, nodes: string[], namespaces: Set<string>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    let left = 0;
    for (const n of nodes) {
      const pods = (await kube.request('GET', `/api/v1/pods?fieldSelector=spec.nodeName%3D${n}`)).body.items ?? [];
      left += pods.filter((p: any) => namespaces.has(p.metadata?.namespace)).length;
    }
    if (left === 0) return;
    if (Date.now() > deadline) throw new Error(`${left} pods still on kwok's nodes after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchScale().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`scale bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
