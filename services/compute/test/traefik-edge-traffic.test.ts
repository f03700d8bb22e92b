// How Traefik's router histograms become counted requests (cluster/traefik-edge-traffic.ts):
// the arithmetic between two reads. That Traefik names routers as traefikRouterKey says, and
// that its real answers are counted, is proven on the real cluster (kubernetes-real-ingress).
import { describe, expect, it } from 'vitest';
import { readAnswer, requestsBetween, traefikRouterKey } from '../src/cluster/traefik-edge-traffic.ts';

const NS = 'pier-vpc-0c6f1f5e-4a8e-4f0e-9d55-2b4a3f9c1e77';
const ROUTER = `${NS}-web-web-apps-example-com`;

/** Traefik's answer for one router: `buckets` are cumulative counts at 0.005, 0.05, +Inf s, per code and method. */
function answer(series: { code: string; method?: string; entryPoint?: string; buckets: [number, number, number] }[]): string {
  const lines = ['# HELP traefik_router_request_duration_seconds How long it took', '# TYPE traefik_router_request_duration_seconds histogram'];
  for (const s of series) {
    const labels = `code="${s.code}",method="${s.method ?? 'GET'}",protocol="http",router="${s.entryPoint ? `${s.entryPoint}-` : ''}${ROUTER}@kubernetes",service="${NS}-web-8080@kubernetes"`;
    ['0.005', '0.05', '+Inf'].forEach((le, i) => lines.push(`traefik_router_request_duration_seconds_bucket{${labels},le="${le}"} ${s.buckets[i]}`));
    lines.push(`traefik_router_request_duration_seconds_count{${labels}} ${s.buckets[2]}`);
  }
  lines.push('process_start_time_seconds 1.7e9', 'go_goroutines 80');
  return lines.join('\n') + '\n';
}

const read = (text: string) => readAnswer(text).counts;

describe("Traefik's router metrics as requests", () => {
  it('names a route as Traefik names its Ingress rule: namespace, Ingress, host, every other character a dash', () => {
    expect(traefikRouterKey(NS, 'web', 'web.apps.example.com')).toBe(ROUTER);
    expect(traefikRouterKey(NS, 'api-v2', 'shop.example.co.uk')).toBe(`${NS}-api-v2-shop-example-co-uk`);
  });

  it('counts what each bucket grew by, per status, summed over methods, at the latency of the bucket', () => {
    const before = read(answer([{ code: '200', buckets: [5, 8, 8] }]));
    const after = read(
      answer([
        { code: '200', buckets: [9, 13, 14] },
        { code: '200', method: 'POST', buckets: [1, 1, 1] },
        { code: '404', buckets: [2, 2, 2] },
        // The same router copied onto the TLS entry point, which Traefik names first.
        { code: '200', method: 'PUT', buckets: [1, 1, 1], entryPoint: 'websecure' },
      ]),
    );
    const got = requestsBetween(before, after, 1000).map((r) => [r.host, r.status, Math.round(r.durationMs * 10) / 10, r.count]);
    expect(got).toEqual([
      // 200: ≤5 ms grew 6 (4 GET, 1 POST, 1 PUT on TLS), 5-50 ms grew 1, over 50 ms 1.
      [ROUTER, 200, 2.5, 6],
      [ROUTER, 200, 15.8, 1],
      [ROUTER, 200, 75, 1],
      [ROUTER, 404, 2.5, 2],
    ]);
    expect(requestsBetween(after, after, 2000)).toEqual([]);
  });

  it('reads a series that shrank as started again from zero (a router removed and made again)', () => {
    const before = read(answer([{ code: '200', buckets: [50, 60, 60] }]));
    const after = read(answer([{ code: '200', buckets: [3, 3, 3] }]));
    expect(requestsBetween(before, after, 1000).map((r) => r.count)).toEqual([3]);
  });

  it('parses only the lines it reads, and refuses a malformed one among them', () => {
    expect(readAnswer(answer([])).started).toBe(1.7e9);
    expect(() => read(`${answer([])}traefik_router_request_duration_seconds_bucket{router="x" 3\n`)).toThrow(/not a Prometheus sample/);
    expect(read('some_other_metric{broken 1\n').size).toBe(0);
  });
});
