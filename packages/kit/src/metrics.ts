import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Knex } from 'knex';

// Every service's GET /metrics (Prometheus text), on its own port and never through the
// gateway. One registry per service (tests run several services in one process). Request
// labels are the route's template (`/api/v1/workspaces/{workspaceID}/...`), never the
// raw URL, so the number of series stays bounded.

/** The route label of a request no route matched (404s, bodies refused before routing). */
export const UNMATCHED_ROUTE = '(unmatched)';

export interface ServiceMetrics {
  registry: Registry;
  /** Records one answered HTTP request: a histogram observe, nothing more on the hot path. */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Records one answered unary gRPC call (kit's startGrpcServer). */
  observeGrpc(method: string, code: string, seconds: number): void;
}

export const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A registry of a Pier process: every series labelled `service`, with Node's process metrics. */
export function serviceRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

export function createServiceMetrics(service: string): ServiceMetrics {
  const registry = serviceRegistry(service);
  const requests = new Histogram({
    name: 'pier_http_request_duration_seconds',
    help: 'HTTP requests answered, by method, route template and status, and how long they took (its _count is the request count)',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const grpcCalls = new Histogram({
    name: 'pier_grpc_server_duration_seconds',
    help: 'Unary gRPC calls answered, by full method and status code, and how long they took',
    labelNames: ['method', 'code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      requests.observe({ method, route, status: String(status) }, seconds);
    },
    observeGrpc(method, code, seconds) {
      grpcCalls.observe({ method, code }, seconds);
    },
  };
}

/** The pool's connections (knex's tarn pool): in use, idle, and acquisitions waiting for one. */
export function watchDbPool(registry: Registry, db: Knex): void {
  new Gauge({
    name: 'pier_db_pool_connections',
    help: 'Database pool connections by state: used, free, pending (acquisitions waiting for a connection)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const pool = (db.client as { pool?: TarnPool }).pool;
      this.set({ state: 'used' }, pool?.numUsed() ?? 0);
      this.set({ state: 'free' }, pool?.numFree() ?? 0);
      this.set({ state: 'pending' }, (pool?.numPendingAcquires() ?? 0) + (pool?.numPendingCreates() ?? 0));
    },
  });
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

/** Outbox rows waiting to be published, and the age of the oldest: read at each scrape. */
export function watchOutbox(registry: Registry, backlog: () => Promise<{ rows: number; oldestSeconds: number }>): void {
  // One query answers both gauges: the first gauge collected runs it, the second reuses it.
  let pending: Promise<{ rows: number; oldestSeconds: number } | undefined> | undefined;
  const read = () => {
    pending ??= backlog()
      .catch(() => undefined) // database down: the gauges keep their last values; /readyz says why
      .finally(() => setImmediate(() => (pending = undefined)));
    return pending;
  };
  new Gauge({
    name: 'pier_outbox_backlog_rows',
    help: 'Outbox rows not yet published to NATS',
    registers: [registry],
    async collect() {
      const b = await read();
      if (b) this.set(b.rows);
    },
  });
  new Gauge({
    name: 'pier_outbox_oldest_unpublished_seconds',
    help: 'Age of the oldest outbox row not yet published (0 when none)',
    registers: [registry],
    async collect() {
      const b = await read();
      if (b) this.set(b.oldestSeconds);
    },
  });
}

export interface CountsGauge {
  name: string;
  help: string;
  /** The label the counts are by (`status`). */
  label: string;
  /** Label values always exposed, 0 when absent from a reading (so a series does not vanish). */
  known?: readonly string[];
  /** The counts by label value, read at each scrape (one GROUP BY). */
  read(): Promise<Record<string, number>>;
}

/** A gauge of counts by one label (records by status), read at scrape time. */
export function watchCounts(registry: Registry, spec: CountsGauge): void {
  new Gauge({
    name: spec.name,
    help: spec.help,
    labelNames: [spec.label],
    registers: [registry],
    async collect() {
      const counts = await spec.read().catch(() => undefined); // database down: keep the last reading
      if (!counts) return;
      this.reset();
      for (const value of spec.known ?? []) this.set({ [spec.label]: value }, 0);
      for (const [value, n] of Object.entries(counts)) this.set({ [spec.label]: value }, n);
    },
  });
}

/** Rows of `query` grouped by `column`, counted: what a `watchCounts` gauge reads. */
export async function countBy(query: Knex.QueryBuilder, column: string): Promise<Record<string, number>> {
  const rows: { value: string; n: number }[] = await query.groupBy(column).select({ value: column }).count({ n: '*' });
  return Object.fromEntries(rows.map((r) => [r.value, Number(r.n)]));
}

/** A latency histogram of a service's own (the seconds buckets of every Pier histogram); returns its observe. */
export function latencyHistogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): (labels: Record<L, string>, seconds: number) => void {
  const histogram = new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS, registers: [registry] });
  return (labels, seconds) => histogram.observe(labels, seconds);
}

/** Told of each cluster API call: its operation, whether it failed, and how long it took. */
export type ClusterCallObserver = (operation: string, outcome: 'ok' | 'error', seconds: number) => void;

/** `pier_cluster_call_duration_seconds` in the service's registry; its observe. */
export function clusterCallMetric(registry: Registry): ClusterCallObserver {
  const observe = latencyHistogram(
    registry,
    'pier_cluster_call_duration_seconds',
    "Calls to the cluster's API (Docker engine or Kubernetes) by operation and outcome (ok, error), and how long they took",
    ['operation', 'outcome'],
  );
  return (operation, outcome, seconds) => observe({ operation, outcome }, seconds);
}

/**
 * A port whose every method that answers a promise is timed as operation
 * `<prefix>.<method>`: the adapters that do not time their own API calls (a port of
 * several steps, a client library's calls) are seen at the port's grain instead. Methods
 * that answer anything else (a stream, an async iterable) pass through as they are.
 */
export function timedPort<T extends object>(port: T, prefix: string, observe: ClusterCallObserver): T {
  return new Proxy(port, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function' || typeof name !== 'string' || name === 'constructor') return value;
      return (...args: unknown[]) => {
        const start = performance.now();
        const seen = (outcome: 'ok' | 'error') => observe(`${prefix}.${name}`, outcome, (performance.now() - start) / 1000);
        let result: unknown;
        try {
          // Called on the port itself, not the proxy: private fields and bound state stay reachable.
          result = Reflect.apply(value, target, args);
        } catch (err) {
          seen('error');
          throw err;
        }
        if (!(result instanceof Promise)) return result;
        return result.then(
          (v: unknown) => {
            seen('ok');
            return v;
          },
          (err: unknown) => {
            seen('error');
            throw err;
          },
        );
      };
    },
  });
}

/** `pier_grpc_client_duration_seconds` in the service's registry: what observingClient reports to. */
export function grpcClientMetric(registry: Registry): (method: string, code: string, seconds: number) => void {
  const observe = latencyHistogram(
    registry,
    'pier_grpc_client_duration_seconds',
    'Unary gRPC calls made to other Pier services, by full method and status code (DEADLINE_EXCEEDED, UNAVAILABLE included), and how long they took',
    ['method', 'code'],
  );
  return (method, code, seconds) => observe({ method, code }, seconds);
}
