/**
 * Elastic benchmark (issue 26), on the docker cluster through the real edge (Caddy, then
 * compute's activator):
 *   1. wake through the edge: an on_demand pier/tiny-http service is put to sleep (as its
 *      idle timeout would) and woken by one GET, PIER_BENCH_WAKES times (20); p50 and p99
 *      of the whole request, and its parts: held for the wake (the Server-Timing `wake`
 *      duration: start the stopped container, until it accepts connections) and the rest
 *      (forwarding and the answer). The same for a service with a health check.
 *   2. 50 requests at once at a sleeping service: all answered? the slowest.
 *   3. autoscaling: a web service with min 1, max 4 and target_concurrency 2 under 8 clients
 *      each keeping one 0.5 s request in flight: seconds to 4 replicas ready, then the load
 *      stops and a trickle continues while it scales back to 1 (scale-down delay 5 s);
 *      replicas over time, and every answer that was not a 200.
 * Compute runs in this process, the edge and the replicas in Docker.
 *
 * `benchElastic()` is what `pnpm bench` calls; `tsx bench/elastic.ts` runs it alone.
 */
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { testEdge } from '@pier/testing';
import { startInfra, type Infra } from './infra.ts';
import { startComputeAlone } from './compute-alone.ts';

const IMAGE = 'pier/tiny-http:1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  ms: number;
  wakeMs: number | null;
}

function get(ip: string, host: string, path = '/'): Promise<Answer> {
  const t = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: ip, port: 80, path, headers: { host }, agent: false, timeout: 60_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        const timing = /wake;dur=(\d+)/.exec(String(res.headers['server-timing'] ?? ''));
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - t, wakeMs: timing ? Number(timing[1]) : null });
      });
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t, wakeMs: null }));
    req.end();
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

export async function benchElastic(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<void> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const wakes = Number(process.env.PIER_BENCH_WAKES ?? 20);
  const infra = opts.infra ?? (await startInfra());
  const edge = testEdge('apps.elastic-bench.test');
  const alone = await startComputeAlone(infra, { ...edge.env, PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS: '5', PIER_COMPUTE_ELASTIC_TICK_MS: '250' });
  const { call } = alone;
  const sleepNow = (alone.compute as unknown as { sleepNow(id: string): Promise<void> }).sleepNow;
  const until = async (id: string, ok: (s: any) => boolean, what: string) => {
    for (let i = 0; i < 600; i++) {
      const s = await call('GET', `/${id}`);
      if (ok(s)) return s;
      await sleep(100);
    }
    throw new Error(`service ${id} did not become ${what}`);
  };
  try {
    // The edge container exists once a first service is routed.
    let ip = '';
    log(`elastic benchmark: pier/tiny-http through the edge and the activator`);

    for (const health of [null, '/healthz']) {
      const web = await call('POST', '', {
        name: health ? 'probed' : 'sleepy',
        image: IMAGE,
        deployment_mode: 'on_demand',
        ...(health ? { health_check_path: health } : {}),
      });
      await until(web.id, (s) => s.status === 'running', 'running');
      const host = new URL(web.url).hostname;
      for (let i = 0; i < 100 && !ip; i++) ip = await edge.ip().catch(async () => (await sleep(100), ''));
      for (let i = 0; i < 50 && (await get(ip, host)).status !== 200; i++) await sleep(100);
      const total: number[] = [];
      const held: number[] = [];
      let failed = 0;
      for (let i = 0; i < wakes; i++) {
        await sleepNow(web.id);
        await until(web.id, (s) => s.status === 'scaled', 'scaled');
        const a = await get(ip, host);
        if (a.status !== 200 || a.wakeMs === null) failed++;
        total.push(a.ms);
        held.push(a.wakeMs ?? NaN);
      }
      const rest = total.map((t, i) => t - held[i]!);
      log(
        `  wake through the edge${health ? ' (health check ' + health + ')' : ''}: p50 ${pct(total, 50).toFixed(0)} ms, p99 ${pct(total, 99).toFixed(0)} ms` +
          `  (${wakes} wakes, ${failed} failed; held for the wake p50 ${pct(held, 50).toFixed(0)} ms, forward and answer p50 ${pct(rest, 50).toFixed(1)} ms)`,
      );

      if (!health) {
        await sleepNow(web.id);
        await until(web.id, (s) => s.status === 'scaled', 'scaled');
        const burst = await Promise.all(Array.from({ length: 50 }, () => get(ip, host)));
        const ok = burst.filter((a) => a.status === 200).length;
        log(`  50 requests at once at a sleeping service: ${ok} of 50 answered 200, the slowest in ${Math.max(...burst.map((a) => a.ms)).toFixed(0)} ms`);
      }
      await call('DELETE', `/${web.id}`);
    }

    const web = await call('POST', '', { name: 'busy', image: IMAGE, min_replicas: 1, max_replicas: 4, target_concurrency: 2 });
    await until(web.id, (s) => s.status === 'running', 'running');
    const host = new URL(web.url).hostname;
    for (let i = 0; i < 50 && (await get(ip, host)).status !== 200; i++) await sleep(100);
    const failures = new Map<string, number>();
    let answered = 0;
    const note = (phase: string, a: Answer) => {
      answered++;
      if (a.status !== 200) failures.set(`${phase}: HTTP ${a.status || 'error'}`, (failures.get(`${phase}: HTTP ${a.status || 'error'}`) ?? 0) + 1);
    };
    const t0 = performance.now();
    const timeline: string[] = [];
    let sampling = true;
    let atMax: number | null = null;
    const sampler = (async () => {
      let last = '';
      while (sampling) {
        const s = await call('GET', `/${web.id}`);
        const now = `${s.replicas.ready}/${s.replicas.desired}`;
        if (now !== last) timeline.push(`${((performance.now() - t0) / 1000).toFixed(1)} s: ${now}`);
        last = now;
        if (atMax === null && s.replicas.ready === 4) atMax = (performance.now() - t0) / 1000;
        await sleep(250);
      }
    })();
    let loading = true;
    const clients = Array.from({ length: 8 }, async () => {
      while (loading) note('scale-up', await get(ip, host, '/cgi-bin/slow?0.5'));
    });
    for (let i = 0; i < 240 && atMax === null; i++) await sleep(250);
    await sleep(3_000);
    loading = false;
    await Promise.all(clients);
    const downFrom = performance.now();
    let trickling = true;
    const trickle = (async () => {
      while (trickling) {
        note('scale-down', await get(ip, host));
        await sleep(20);
      }
    })();
    await until(web.id, (s) => s.replicas.desired === 1 && s.replicas.ready === 1, 'back at 1 replica');
    const downSeconds = (performance.now() - downFrom) / 1000;
    trickling = false;
    await trickle;
    sampling = false;
    await sampler;
    const errors = [...failures.values()].reduce((a, b) => a + b, 0);
    log(
      `  autoscaling 1..4 (target 2 in flight, 8 clients): 4 replicas ready after ${atMax === null ? 'never' : `${(atMax as number).toFixed(1)} s`}, back to 1 ${downSeconds.toFixed(1)} s after the load stopped (delay 5 s); ${errors} errors in ${answered} requests`,
    );
    log(`    ready/desired over time: ${timeline.join(', ')}`);
    if (failures.size) log(`    errors: ${[...failures].map(([what, n]) => `${what} x${n}`).join(', ')}`);
  } finally {
    await alone.stop();
    await edge.remove();
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  benchElastic().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`elastic bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
