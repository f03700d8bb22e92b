import http from 'node:http';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { createDb, migrate, type Migration } from './db.ts';
import { createLogger, type Logger } from './logger.ts';
import { IdentityVerifier } from './identity.ts';
import { OutboxRelay } from './outbox.ts';
import { holderId, Leases } from './leases.ts';
import { natsTarget } from './nats-connect.ts';
import { Drain } from './drain.ts';
import { createServiceApp } from './service-app.ts';
import type { Route } from './route.ts';
import { IdempotencyKeys } from './idempotency.ts';
import { upgradeHandler, type UpgradeRoute } from './upgrade.ts';
import { startGrpcServer, stopGrpcServer, type GrpcServiceDefinition } from './grpc.ts';
import { createServiceMetrics, watchDbPool, watchOutbox } from './metrics.ts';
import { checkReadiness, type ReadinessChecks } from './readiness.ts';
import type { Registry } from 'prom-client';

// The one way a Pier service starts and stops. Every service's server.ts is a `wire`
// function handed to startService; main.ts is runMain(start). Start-up that fails part way
// stops what it had started, in reverse order, so a port in use or a bad key leaves no
// pool, relay or timer behind.

/** What every service's `start()` returns: where it listens and how to stop it. */
export interface RunningService {
  name: string;
  httpPort: number;
  grpcPort?: number;
  stop(): Promise<void>;
}

/** Things to stop, stopped in the reverse order they were started. */
export class Lifecycle {
  private readonly stops: { what: string; stop: () => unknown }[] = [];

  constructor(private readonly log: Logger) {}

  onStop(what: string, stop: () => unknown): void {
    this.stops.push({ what, stop });
  }

  async stopAll(): Promise<void> {
    for (const { what, stop } of this.stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (err) {
        this.log.warn({ err: String(err), what }, 'error while stopping');
      }
    }
  }
}

/** Background work a service owns (reconcilers, schedulers): started after wiring, stopped before the pool closes. */
export interface Background {
  start(): void;
  stop(): Promise<void>;
  /**
   * Settles once what a previous process left half done has been finished or undone (a
   * reconciler's first pass): a keyed request whose first attempt died waits for it.
   */
  recovered?(): Promise<void>;
}

/** The environment every service with a schema reads (kit's `serviceEnv`). */
export interface ServiceBaseConfig {
  PIER_DATABASE_URL: string;
  PIER_NATS_URL: string;
  /** The service's NATS user and password, when NATS has users. */
  PIER_NATS_USER?: string;
  PIER_NATS_PASSWORD?: string;
  PIER_IDENTITY_PUBLIC_KEY: string;
  PIER_BIND_HOST: string;
  PIER_LOG_LEVEL: string;
  /** Published outbox rows older than this are deleted (default 3600). */
  PIER_OUTBOX_RETENTION_SECONDS?: number;
  /** Outbox rows published, and marked in one UPDATE, per batch (default 500). */
  PIER_OUTBOX_PUBLISH_BATCH?: number;
  /** Outbox rows deleted per DELETE when trimming (default 5000). */
  PIER_OUTBOX_TRIM_BATCH?: number;
  /** Longest a new database connection may take; then the request is 503 `unavailable` (default 1500). */
  PIER_DATABASE_CONNECT_TIMEOUT_MS?: number;
  /** Longest a query waits for a pooled connection (default 10000). */
  PIER_DATABASE_ACQUIRE_TIMEOUT_MS?: number;
  /** A graceful stop (drain.ts): how long to keep serving after readiness fails (default 0). */
  PIER_SHUTDOWN_DELAY_MS?: number;
  /** A graceful stop: how long requests in flight may take to finish (default 10000). */
  PIER_SHUTDOWN_GRACE_MS?: number;
}

/** What the skeleton hands a service's wiring. */
export interface ServiceRuntime {
  logger: Logger;
  /** A pool whose unqualified names resolve in the service's own schema, already migrated. */
  db: Knex;
  verifier: IdentityVerifier;
  /** Already started; `relay.poke()` after a commit that wrote events publishes them now. */
  relay: OutboxRelay;
  /** The registry GET /metrics serves: a service adds its own metrics to it. */
  metrics: Registry;
  /**
   * This instance's leases in the service's schema (its migrations create the table with
   * createLeasesTable): ResourceLocks and leaderOnly share the work of several instances.
   */
  leases: Leases;
  onStop(what: string, stop: () => unknown): void;
}

export interface ServiceParts<Extra extends object> {
  routes: Route[];
  /** WebSocket routes (a shell), served on the same port. */
  upgrades?: UpgradeRoute[];
  /** Checks for GET /healthz beyond the database's own `select 1`. */
  health?: () => Promise<void>;
  /**
   * Dependencies GET /readyz checks beside the database and NATS, by the name it reports
   * them under (`cluster`: a ping of the cluster's API).
   */
  checks?: ReadinessChecks;
  bodyLimit?: string;
  /** Longest silence on an event stream before a keep-alive comment (default 15 s). */
  keepAliveMs?: number;
  grpc?: { port: number; services: GrpcServiceDefinition[] };
  background?: Background[];
  /** Extra members of the returned handle (levers for operators and tests). */
  extra?: Extra;
  /** Fields of the "listening" log line. */
  describe?: Record<string, unknown>;
}

export interface ServiceSpec<Extra extends object> {
  name: string;
  config: ServiceBaseConfig;
  httpPort: number;
  schema: string;
  migrations: Migration[];
  /** Where log lines go; standard output when absent (tests capture them). */
  logDestination?: NodeJS.WritableStream;
  wire(rt: ServiceRuntime): Promise<ServiceParts<Extra>>;
}

/** config → database and migrations → identity → outbox relay → metrics → wiring → gRPC → background → HTTP (with /healthz, /readyz, /metrics). */
export async function startService<Extra extends object = Record<never, never>>(spec: ServiceSpec<Extra>): Promise<RunningService & Extra> {
  const { config } = spec;
  const logger = createLogger(spec.name, config.PIER_LOG_LEVEL, spec.logDestination);
  const life = new Lifecycle(logger);
  try {
    const db = createDb(config.PIER_DATABASE_URL, spec.schema, undefined, {
      connectMs: config.PIER_DATABASE_CONNECT_TIMEOUT_MS,
      acquireMs: config.PIER_DATABASE_ACQUIRE_TIMEOUT_MS,
    });
    life.onStop('database pool', () => db.destroy());
    await migrate(db, spec.schema, spec.migrations);
    const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
    const relay = new OutboxRelay(db, spec.name, natsTarget(config), logger, {
      retentionSeconds: config.PIER_OUTBOX_RETENTION_SECONDS,
      publishBatch: config.PIER_OUTBOX_PUBLISH_BATCH,
      trimBatch: config.PIER_OUTBOX_TRIM_BATCH,
    });
    relay.start();
    life.onStop('outbox relay', () => relay.stop());

    const metrics = createServiceMetrics(spec.name);
    watchDbPool(metrics.registry, db);
    watchOutbox(metrics.registry, () => relay.backlog());

    const leases = new Leases(db, holderId(spec.name));
    const parts = await spec.wire({ logger, db, verifier, relay, metrics: metrics.registry, leases, onStop: (what, stop) => life.onStop(what, stop) });
    const checks: ReadinessChecks = { database: () => db.raw('select 1'), nats: () => relay.checkNats(), ...parts.checks };

    let grpcPort: number | undefined;
    if (parts.grpc) {
      const grpc = await startGrpcServer(config.PIER_BIND_HOST, parts.grpc.port, parts.grpc.services, (method, code, seconds) =>
        metrics.observeGrpc(method, code, seconds),
      );
      life.onStop('gRPC server', () => stopGrpcServer(grpc.server));
      grpcPort = grpc.port;
    }
    const background = parts.background ?? [];
    for (const work of background) {
      work.start();
      life.onStop('background work', () => work.stop());
    }
    const idempotency = new IdempotencyKeys(
      db,
      config.PIER_DATABASE_URL,
      spec.name,
      logger,
      async () => {
        await Promise.all(background.map((work) => work.recovered?.()));
      },
      config.PIER_DATABASE_CONNECT_TIMEOUT_MS,
    );
    idempotency.start();
    life.onStop('idempotency keys', () => idempotency.stop());
    const drain = new Drain();
    const app = createServiceApp({
      drain,
      service: spec.name,
      logger,
      verifier,
      routes: parts.routes,
      idempotency,
      upgrades: parts.upgrades,
      bodyLimit: parts.bodyLimit,
      keepAliveMs: parts.keepAliveMs,
      health: async () => {
        await db.raw('select 1');
        await parts.health?.();
      },
      ready: () => checkReadiness(checks),
      metrics,
    });
    const { server, port } = await listen(app, spec.httpPort, config.PIER_BIND_HOST);
    const upgrades = parts.upgrades?.length ? upgradeHandler({ routes: parts.upgrades, verifier, logger }) : undefined;
    if (upgrades) server.on('upgrade', upgrades.listener);
    // The first step of a stop (the Lifecycle runs them last to first): leave the
    // endpoints, end streams and sockets (reconnect), let requests in flight finish; then
    // background loops stop (leaders hand over), then the pools close.
    const times = { delayMs: config.PIER_SHUTDOWN_DELAY_MS ?? 0, graceMs: config.PIER_SHUTDOWN_GRACE_MS ?? 10_000 };
    life.onStop('HTTP server', () => drain.run(server, times, logger, () => upgrades?.close()));
    logger.info({ port, grpcPort, ...parts.describe }, `${spec.name} listening`);
    return { name: spec.name, httpPort: port, grpcPort, stop: () => life.stopAll(), ...(parts.extra as Extra) };
  } catch (err) {
    await life.stopAll();
    throw err;
  }
}

/**
 * A service process's main: starts it, stops it gracefully on SIGINT/SIGTERM, and turns a
 * failed start (bad configuration, a port in use) into one line on stderr and exit code 1.
 */
export function runMain(name: string, start: () => Promise<RunningService>): void {
  start().then(
    (running) => {
      const stop = () =>
        void running.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    },
    (err: unknown) => {
      process.stderr.write(`${name}: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

/**
 * Request line plus headers a service reads: twice Node's default, which the gateway keeps,
 * because what the gateway forwards carries the identity token as well. A request the
 * gateway took is never refused by the service for its size.
 */
export const SERVICE_MAX_HEADER_BYTES = 32 * 1024;

export async function listen(
  app: Express | http.RequestListener,
  port: number,
  host = '127.0.0.1',
  options: http.ServerOptions = {},
): Promise<{ server: http.Server; port: number }> {
  // Longer keep-alive than the load balancers usually in front (60 s).
  const server = http.createServer({ keepAliveTimeout: 65_000, maxHeaderSize: SERVICE_MAX_HEADER_BYTES, ...options }, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}

export function close(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
