// pier services metrics: a service's CPU, memory, requests, status classes and latency over
// the last hour, day or week — a summary over the window, then the most recent steps.
import { type Command, InvalidArgumentError } from 'commander';
import { unwrap, type paths } from '@pier/sdk';
import { examples, run } from '../command.ts';
import type { Context } from '../context.ts';
import { service, SERVICE } from '../resources.ts';

const METRICS = `${SERVICE}/metrics` as const;

type Metrics = paths[typeof METRICS]['get']['responses'][200]['content']['application/json'];
type Window = NonNullable<NonNullable<paths[typeof METRICS]['get']['parameters']['query']>['window']>;
type Point = Metrics['points'][number];

const WINDOWS: Window[] = ['1h', '24h', '7d'];
/** Steps shown in the table: the window's most recent ones (--json has them all). */
const RECENT_STEPS = 15;

function windowOf(value: string): Window {
  if (!(WINDOWS as string[]).includes(value)) throw new InvalidArgumentError(`one of ${WINDOWS.join(', ')}`);
  return value as Window;
}

/** 123456789 -> "117.7 MiB". */
export function bytes(n: number | null): string | null {
  if (n === null) return null;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u ? v.toFixed(1) : v} ${units[u]}`;
}

const cores = (n: number | null) => (n === null ? null : `${n.toFixed(3)} cores`);
const ms = (n: number | null) => (n === null ? null : `${n} ms`);
const classes = (r: Point['responses']) => (r === null ? null : `${r['2xx']}/${r['3xx']}/${r['4xx']}/${r['5xx']}`);
const latest = <T>(points: Point[], pick: (p: Point) => T | null): T | null => {
  for (let i = points.length - 1; i >= 0; i--) {
    const v = pick(points[i]!);
    if (v !== null) return v;
  }
  return null;
};

function show(ctx: Context, m: Metrics): void {
  const t = m.totals;
  ctx.out.fields([
    ['window', `${m.window} (steps of ${m.resolution_seconds / 60} min, ${m.from} to ${m.to})`],
    ['cpu now', cores(latest(m.points, (p) => p.cpu_cores))],
    ['memory now', bytes(latest(m.points, (p) => p.memory_bytes))],
    ['limits', `${m.limits.cpu_cores} cores, ${bytes(m.limits.memory_bytes)} per replica`],
    ['requests', m.requests_unavailable ?? t.requests],
    ['2xx/3xx/4xx/5xx', classes(t.responses)],
    ['latency p50', ms(t.latency_p50_ms)],
    ['latency p95', ms(t.latency_p95_ms)],
  ]);
  ctx.out.line();
  const recent = m.points.slice(-RECENT_STEPS).reverse();
  ctx.out.table(recent, [
    { header: 'AT', value: (p) => p.at },
    { header: 'CPU', value: (p) => cores(p.cpu_cores) },
    { header: 'MEMORY', value: (p) => bytes(p.memory_bytes) },
    { header: 'REQ/S', value: (p) => p.requests_per_second },
    { header: '2XX/3XX/4XX/5XX', value: (p) => classes(p.responses) },
    { header: 'P50', value: (p) => ms(p.latency_p50_ms) },
    { header: 'P95', value: (p) => ms(p.latency_p95_ms) },
  ]);
}

export function register(services: Command): void {
  examples(
    services
      .command('metrics <service>')
      .description(
        `CPU and memory (all replicas together), requests per second, responses by status class and latency p50/p95: totals over the window, then its ${RECENT_STEPS} latest steps, newest first (--json: every step)`,
      )
      .option('--window <window>', 'how far back: 1h (1-minute steps), 24h (15-minute steps) or 7d (hourly steps)', windowOf, '1h' as Window)
      .action(
        run(async (ctx, ref: string, o: { window: Window }) => {
          const { client, path } = await service(ctx, ref);
          const m = await unwrap(client.GET(METRICS, { params: { path, query: { window: o.window } } }));
          ctx.out.result(m, () => show(ctx, m));
        }),
      ),
    'pier services metrics web',
    'pier services metrics web --window 24h',
  );
}
