/**
 * Services benchmark (issue 4), on the docker cluster with the locally built pier/tiny-http:
 *   1. list 200 services with live status through the gateway — p50 and p99, and how many
 *      cluster (Docker Engine API) calls one list makes (compute reports it per response in
 *      `x-pier-cluster-calls`; target: one);
 *   2. the console's services page showing them all, in chromium (bench/console-render.ts);
 *   3. time from `POST deploy` to the detail reading `running`, for the tiny HTTP image
 *      with a health check path (polled every 25 ms through the gateway).
 * The whole platform runs in this process (test/support/platform-core.ts), so the load
 * generator shares the CPU with it, as a script on the same machine would.
 *
 * `benchServices()` is what `pnpm bench` calls; `tsx bench/services.ts` runs it alone.
 * Env: PIER_BENCH_SERVICES (200), PIER_BENCH_LIST_REQUESTS (300), PIER_BENCH_DEPLOYS (5),
 * PIER_BENCH_POSTGRES_URL / PIER_BENCH_NATS_URL (else containers, see infra.ts).
 */
import http from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startInfra, type Infra } from './infra.ts';
import { startPlatformAt } from '../test/support/platform-core.ts';
import { benchConsoleRender } from './console-render.ts';

const run = promisify(execFile);
const IMAGE = 'pier/tiny-http:1';

export interface ServicesBenchResult {
  services: number;
  list: { requests: number; p50: number; p99: number; clusterCalls: number[] };
  deployToRunning: { samples: number[]; p50: number; max: number };
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** One GET over a keep-alive agent: status, body, the cluster-calls header and the latency. */
function get(agent: http.Agent, url: URL, token: string): Promise<{ status: number; body: any; calls: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, headers: { authorization: `Bearer ${token}` }, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const ms = performance.now() - t0;
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, calls: Number(res.headers['x-pier-cluster-calls'] ?? NaN), ms });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function send(base: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Milliseconds of the same container listing compute makes for a list, straight to the Engine API. */
function engineList(vpcId: string): Promise<number> {
  const filters = encodeURIComponent(JSON.stringify({ label: ['pier.managed=true', 'pier.kind=service', `pier.vpc=${vpcId}`] }));
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ socketPath: '/var/run/docker.sock', path: `/containers/json?all=1&filters=${filters}` }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function removeContainers(vpcId: string): Promise<void> {
  const { stdout } = await run('docker', ['ps', '-aq', '--filter', 'label=pier.managed=true', '--filter', `label=pier.vpc=${vpcId}`]);
  const ids = stdout.trim().split('\n').filter(Boolean);
  for (let i = 0; i < ids.length; i += 50) await run('docker', ['rm', '-f', ...ids.slice(i, i + 50)]).catch(() => undefined);
  await run('docker', ['network', 'rm', `pier-vpc-${vpcId}`]).catch(() => undefined);
}

export async function benchServices(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<ServicesBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const count = Number(process.env.PIER_BENCH_SERVICES ?? 200);
  const listRequests = Number(process.env.PIER_BENCH_LIST_REQUESTS ?? 300);
  const deploys = Number(process.env.PIER_BENCH_DEPLOYS ?? 5);
  const infra = opts.infra ?? (await startInfra());
  const platform = await startPlatformAt({ postgresAdminUrl: infra.postgresAdminUrl, natsUrl: infra.natsUrl, logLevel: 'warn' });
  const { token, workspaceId, vpcId } = platform.bootstrap;
  const gw = platform.gatewayUrl;
  const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
  try {
    log(`pier bench — services on docker (${IMAGE}), through the gateway`);
    const t0 = performance.now();
    let next = 0;
    const create = async () => {
      while (next < count) {
        const i = next++;
        const res = await send(gw, token, 'POST', base, { name: `bench-${i}`, image: IMAGE, health_check_path: '/healthz' });
        if (res.status !== 201) throw new Error(`create bench-${i}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    };
    await Promise.all(Array.from({ length: 4 }, create));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const listUrl = new URL(`${gw}${base}?limit=200`);
    for (;;) {
      const r = await get(agent, listUrl, token);
      const running = r.body.items.filter((s: { status: string }) => s.status === 'running').length;
      if (running === count) break;
      if (performance.now() - t0 > 600_000) throw new Error(`only ${running} of ${count} services running after 10 minutes`);
      await new Promise((res) => setTimeout(res, 500));
    }
    log(`  ${count} services created and running in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // 1. The list, one request at a time (its own latency, not queueing behind itself).
    for (let i = 0; i < 20; i++) await get(agent, listUrl, token); // warm-up
    const latencies: number[] = [];
    const calls = new Set<number>();
    for (let i = 0; i < listRequests; i++) {
      const r = await get(agent, listUrl, token);
      if (r.status !== 200 || r.body.items.length !== count) throw new Error(`list answered ${r.status} with ${r.body?.items?.length} items`);
      latencies.push(r.ms);
      calls.add(r.calls);
    }
    agent.destroy();
    const sorted = [...latencies].sort((a, b) => a - b);
    const list = { requests: listRequests, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), clusterCalls: [...calls] };
    log(`  list ${count} services with live status: p50 ${list.p50.toFixed(2)} ms, p99 ${list.p99.toFixed(2)} ms (${listRequests} requests, one at a time)`);
    log(
      `  cluster calls per list: ${list.clusterCalls.join(', ')}  (target 1: ${list.clusterCalls.length === 1 && list.clusterCalls[0] === 1 ? 'met' : 'MISSED'})`,
    );
    // The one call on its own: the Engine API's filtered container listing for the VPC.
    const engine: number[] = [];
    for (let i = 0; i < 50; i++) engine.push(await engineList(vpcId));
    engine.sort((a, b) => a - b);
    log(`  of which the Docker Engine's container list alone: p50 ${percentile(engine, 0.5).toFixed(2)} ms, p99 ${percentile(engine, 0.99).toFixed(2)} ms`);

    // The same list in the web console, in a browser.
    await benchConsoleRender(gw, token, count, log);

    // 2. Deploy to running.
    const svc = await send(gw, token, 'POST', base, { name: 'bench-deploy', health_check_path: '/healthz' });
    const detail = new URL(`${gw}${base}/${svc.body.id}`);
    const pollAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const samples: number[] = [];
    for (let i = 0; i < deploys; i++) {
      const start = performance.now();
      const dep = await send(gw, token, 'POST', `${base}/${svc.body.id}/deploy`, { image_tag: IMAGE });
      if (dep.status !== 202) throw new Error(`deploy: ${dep.status} ${JSON.stringify(dep.body)}`);
      const accepted = performance.now() - start;
      for (;;) {
        const r = await get(pollAgent, detail, token);
        if (r.body.status === 'running') break;
        if (r.body.status === 'crashed') throw new Error(`deploy crashed: ${r.body.status_message}`);
        if (performance.now() - start > 60_000) throw new Error('deploy did not reach running within 60 s');
        await new Promise((res) => setTimeout(res, 25));
      }
      samples.push(performance.now() - start);
      log(`  deploy #${i + 1}: 202 after ${accepted.toFixed(0)} ms, running after ${samples[i]!.toFixed(0)} ms`);
    }
    pollAgent.destroy();
    const ds = [...samples].sort((a, b) => a - b);
    const deployToRunning = { samples, p50: percentile(ds, 0.5), max: ds[ds.length - 1]! };
    log(
      `  deploy → running (${IMAGE}, health check /healthz): median ${deployToRunning.p50.toFixed(0)} ms, max ${deployToRunning.max.toFixed(0)} ms over ${deploys} deploys`,
    );
    return { services: count, list, deployToRunning };
  } finally {
    await platform.stop().catch(() => undefined);
    await removeContainers(vpcId).catch(() => undefined);
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchServices().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`services bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
