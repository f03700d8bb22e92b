// The gateway's own /metrics, /healthz and /readyz. They are served on a port of their own
// (PIER_GATEWAY_METRICS_PORT), never on the public one: what the platform does is for its
// operators, and the public port answers 404 for these paths.
import type http from 'node:http';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { CacheResult } from '../answer-cache.ts';
import { checkReadiness, grpcClientMetric, LATENCY_BUCKETS, serviceRegistry, type Drain, type GrpcCallObserver, type ReadinessChecks } from '@pier/kit';

export interface GatewayMetrics {
  registry: Registry;
  /** One answered request: the service it went to (`gateway` for the gateway's own answers). */
  observeRequest(method: string, upstream: string, status: number, seconds: number): void;
  /** A request refused with 429, by the bucket that ran out (`token`, `address`). */
  rateLimited(bucket: 'token' | 'address'): void;
  /** The auth client's calls (pier_grpc_client_duration_seconds). */
  grpcClient: GrpcCallObserver;
  /** One authenticated request: answered from the cache, asked of auth, or asked with the cache not usable. */
  authCache(result: CacheResult): void;
  /** Publishes how long the cache stays usable (seconds; negative: expired that long ago), read at each scrape. */
  followCacheLease(secondsLeft: () => number): void;
}

export function createGatewayMetrics(): GatewayMetrics {
  const registry = serviceRegistry('gateway');
  // By upstream, not by route template: the gateway routes by prefix and knows no templates;
  // each service's own /metrics has them.
  const requests = new Histogram({
    name: 'pier_gateway_request_duration_seconds',
    help: 'Requests the gateway answered (proxied or its own), by method, upstream service and status, and how long they took',
    labelNames: ['method', 'upstream', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const limited = new Counter({
    name: 'pier_gateway_rate_limited_total',
    help: 'Requests refused with 429 rate_limited, by the bucket that ran out',
    labelNames: ['bucket'] as const,
    registers: [registry],
  });
  const cache = new Counter({
    name: 'pier_gateway_auth_cache_total',
    help: "Authenticated requests by how auth's answer was had: hit (the cache), miss (asked auth, the cache usable), off (asked auth, the cache not usable: no lease)",
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const cacheChildren = { hit: cache.labels({ result: 'hit' }), miss: cache.labels({ result: 'miss' }), off: cache.labels({ result: 'off' }) };
  // prom-client hashes a label set on every observe (sorted keys, joined string): keep
  // each series' child, found by one string key, so the hot path observes it directly.
  const series = new Map<string, { observe(seconds: number): void }>();
  const MAX_SERIES = 1000;
  return {
    registry,
    observeRequest: (method, upstream, status, seconds) => {
      const key = `${method} ${upstream} ${status}`;
      let child = series.get(key);
      if (child === undefined) {
        child = requests.labels({ method, upstream, status: String(status) });
        // Methods are the client's to choose: do not let odd ones grow the map forever.
        if (series.size < MAX_SERIES) series.set(key, child);
      }
      child.observe(seconds);
    },
    rateLimited: (bucket) => limited.inc({ bucket }),
    grpcClient: grpcClientMetric(registry),
    authCache: (result) => cacheChildren[result].inc(),
    followCacheLease: (secondsLeft) => {
      new Gauge({
        name: 'pier_gateway_auth_cache_lease_seconds',
        help: "How long the cache of auth's answers stays usable without a new epoch tick (negative: it has not been usable for that long)",
        registers: [registry],
        collect() {
          this.set(secondsLeft());
        },
      });
    },
  };
}

/** The internal port's listener: /metrics, /healthz (alive), /readyz (auth and each routed service reachable). */
export function internalHandler(metrics: GatewayMetrics, checks: ReadinessChecks, drain?: Drain): http.RequestListener {
  const send = (res: http.ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
  const json = (res: http.ServerResponse, status: number, body: unknown) => send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return json(res, 405, { error: `${req.method} is not allowed here`, code: 'method_not_allowed' });
    // Stopping (kit's drain.ts): both fail, so whichever the readiness probe reads (the
    // chart's: /healthz) takes the gateway out of the Service's endpoints while it finishes.
    if (drain?.draining && (path === '/healthz' || path === '/readyz')) return json(res, 503, { status: 'draining', service: 'gateway', checks: {} });
    if (path === '/healthz') return json(res, 200, { status: 'ok', service: 'gateway' });
    if (path === '/readyz') {
      void checkReadiness(checks).then((r) => json(res, r.status === 'ready' ? 200 : 503, { status: r.status, service: 'gateway', checks: r.checks }));
      return;
    }
    if (path === '/metrics') {
      void metrics.registry.metrics().then(
        (text) => send(res, 200, metrics.registry.contentType, text),
        () => json(res, 500, { error: 'could not collect the metrics', code: 'internal' }),
      );
      return;
    }
    json(res, 404, { error: `no route for GET ${path}`, code: 'route_not_found' });
  };
}
