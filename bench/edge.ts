/**
 * Edge benchmark (issue 12), on the docker cluster: what the edge (pier/edge, Caddy) adds
 * to a request, and whether routing changes drop any.
 *   1. direct: GET / straight to one replica of a pier/tiny-http service (its container IP);
 *   2. edge, steady: the same GET through the edge, by Host header;
 *   3. edge, changing: the same load while the service's routes change ten times — deploys,
 *      restarts, scale up and down, env changes (each a rollout that replaces every replica),
 *      and another service created and deleted (each a configuration load on the edge).
 *      Every answer that is not a 200 counts as an error (goal: 0).
 * Compute runs in this process, the edge and the replicas in Docker; one load generator.
 *
 * `benchEdge()` is what `pnpm bench` calls; `tsx bench/edge.ts` runs it alone.
 * Env: PIER_BENCH_EDGE_CONCURRENCY (4), PIER_BENCH_EDGE_SECONDS (8, each steady run).
 */
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { docker, testEdge } from '@pier/testing';
import { startInfra, type Infra } from './infra.ts';
import { runClosedLoop, type LoadResult, type Send } from './load.ts';
import { startComputeAlone } from './compute-alone.ts';

const IMAGE = 'pier/tiny-http:1';

export interface EdgeBenchResult {
  direct: LoadResult;
  steady: LoadResult;
  changing: LoadResult & { changes: string[] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What went wrong, counted: an HTTP status other than 200, or a client-side error code. */
type Failures = Map<string, number>;

/** GETs of `/` at `host:port` with a Host header, over keep-alive connections; 200 is success. */
function sender(
  host: string,
  port: number,
  hostHeader: string,
  concurrency: number,
  failures: Failures = new Map(),
  during: () => string = () => 'steady',
): Send {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const fail = (what: string) => {
    const key = `${during()}: ${what}`;
    failures.set(key, (failures.get(key) ?? 0) + 1);
  };
  return () =>
    new Promise((resolve) => {
      const req = http.request({ host, port, path: '/', headers: { host: hostHeader }, agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`);
          resolve(res.statusCode === 200);
        });
        // The answer cut short after its head (the connection ended under it).
        res.on('error', (err: NodeJS.ErrnoException) => {
          fail(`answer cut short: ${err.code ?? err.message}`);
          resolve(false);
        });
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        fail(err.code ?? err.message);
        resolve(false);
      });
      req.on('timeout', () => req.destroy());
      req.end();
    });
}

const fmt = (r: LoadResult) =>
  `${r.rps.toFixed(0).padStart(6)} req/s   p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   (${r.requests} requests, ${r.errors} errors)`;

export async function benchEdge(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<EdgeBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const concurrency = Number(process.env.PIER_BENCH_EDGE_CONCURRENCY ?? 4);
  const seconds = Number(process.env.PIER_BENCH_EDGE_SECONDS ?? 8);
  const infra = opts.infra ?? (await startInfra());
  // An edge of its own, on free ports (not this machine's 80 and 443).
  const edge = testEdge('apps.bench.test');
  const alone = await startComputeAlone(infra, edge.env);
  const call = alone.call;
  const running = async (id: string) => {
    for (let i = 0; i < 600; i++) {
      if ((await call('GET', `/${id}`)).status === 'running') return;
      await sleep(100);
    }
    throw new Error(`service ${id} did not reach running`);
  };
  try {
    const web = await call('POST', '', { name: 'web', image: IMAGE, min_replicas: 2, health_check_path: '/healthz' });
    await running(web.id);
    const host = new URL(web.url).hostname;
    const edgeIp = await edge.ip();
    const replica = (await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${web.id}`] }) }))[0]!;
    const replicaIp = Object.values(replica.NetworkSettings.Networks)[0]!.IPAddress;
    const viaEdge = sender(edgeIp, 80, host, concurrency);
    for (let i = 0; i < 50 && !(await viaEdge()); i++) await sleep(100);
    const bounds = { concurrency, maxRequests: 1_000_000, maxSeconds: seconds };

    log(`edge benchmark: pier/tiny-http, 2 replicas, concurrency ${concurrency}, ${seconds} s per steady run`);
    const direct = await runClosedLoop(sender(replicaIp, 8080, host, concurrency), bounds);
    log(`  direct to a replica      ${fmt(direct)}`);
    const steady = await runClosedLoop(viaEdge, bounds);
    log(`  through the edge         ${fmt(steady)}`);
    log(`  the edge adds            p50 ${(steady.p50 - direct.p50).toFixed(2)} ms, p99 ${(steady.p99 - direct.p99).toFixed(2)} ms`);

    const changes: string[] = [];
    let current = 'before the changes';
    const change = async (what: string, fn: () => Promise<unknown>) => {
      current = what;
      await fn();
      changes.push(what);
      await sleep(500);
      await running(web.id);
    };
    let stop = false;
    const failures: Failures = new Map();
    const load = runClosedLoop(
      sender(edgeIp, 80, host, concurrency, failures, () => current),
      { concurrency, maxRequests: 1_000_000, maxSeconds: 600, stop: () => stop },
    );
    const t0 = performance.now();
    await change('deploy', () => call('POST', `/${web.id}/deploy`, { image_tag: IMAGE }));
    await change('scale up to 3', () => call('PATCH', `/${web.id}`, { min_replicas: 3 }));
    await change('restart', () => call('POST', `/${web.id}/restart`));
    await change('env change', () => call('PUT', `/${web.id}/env`, { variables: [{ key: 'BENCH', value: '1' }] }));
    await change('scale down to 2', () => call('PATCH', `/${web.id}`, { min_replicas: 2 }));
    let other: { id: string } | undefined;
    await change('another service created', async () => (other = await call('POST', '', { name: 'other', image: IMAGE })));
    await change('deploy', () => call('POST', `/${web.id}/deploy`, { image_tag: IMAGE }));
    await change('another service deleted', () => call('DELETE', `/${other!.id}`));
    await change('restart', () => call('POST', `/${web.id}/restart`));
    await change('env change', () => call('PUT', `/${web.id}/env`, { variables: [{ key: 'BENCH', value: '2' }] }));
    current = 'after the changes';
    await sleep(1000);
    stop = true;
    const result = { direct, steady, changing: { ...(await load), changes } };
    log(`  through the edge, 10 route changes in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${fmt(result.changing)}`);
    log(`    changes: ${changes.join(', ')}`);
    if (failures.size) log(`    errors: ${[...failures].map(([what, n]) => `${what} x${n}`).join(', ')}`);
    return result;
  } finally {
    await alone.stop();
    await edge.remove();
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchEdge().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`edge bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
