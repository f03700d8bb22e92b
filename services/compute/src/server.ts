import {
  ResourceLocks,
  clusterCallMetric,
  grpcClientMetric,
  leaderOnly,
  natsTarget,
  startService,
  timedPort,
  watchCounts,
  type RunningService,
} from '@pier/kit';
import { SERVICE_STATUSES } from './domain/services/status.ts';
import { servicesByStatus, unfinishedBuilds } from './store/status-counts.ts';
import type { ComputeConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexComputeStore } from './store/store.ts';
import { createCluster, createLogSource, createShell } from './cluster/factory.ts';
import { KnexLogStore } from './store/log-store.ts';
import { LogFeed } from './domain/logs/log-feed.ts';
import { LogCollector } from './domain/logs/log-collector.ts';
import { LogRetention } from './domain/logs/log-retention.ts';
import { createSecretsPort } from './secrets/grpc-secrets.ts';
import type { ComputeContext } from './domain/context.ts';
import { computeReconciler } from './domain/services/reconciler.ts';
import { BuildWorker } from './domain/builds/build-worker.ts';
import { createBuilds } from './build-wiring.ts';
import { computeRoutes, computeUpgrades } from './app.ts';
import { createEdge } from './edge-wiring.ts';
import { DockerEdge } from './cluster/docker-edge.ts';
import { DockerCluster } from './cluster/docker.ts';
import { createElastic } from './elastic-wiring.ts';
import { EdgeWorker } from './domain/edge/edge-worker.ts';
import { ClaimExpiry } from './domain/hostnames/claim-expiry.ts';
import { createUptime, publicUrlTarget } from './uptime-wiring.ts';
import { UptimeChecker } from './domain/uptime/uptime-checker.ts';
import { createDiskBackups } from './disk-backup-wiring.ts';
import { DiskBackupWorker } from './domain/disk-backups/disk-backup-worker.ts';
import { NatsLogFanout } from './clients/nats-log-fanout.ts';
import { createPokes } from './pokes-wiring.ts';
import { createMetrics } from './metrics-wiring.ts';
import { MetricsCollector } from './domain/metrics/metrics-collector.ts';
import { MetricsRollup } from './domain/metrics/metrics-rollup.ts';

export interface StartOptions {
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
}

/** Levers of a running compute, for operators and tests. */
export interface ComputeLevers {
  /** One disk-backup scheduler pass as if it were `now`: due schedules, retention, deleted services' backups. */
  runDiskBackupsDue(now: Date): Promise<void>;
  /** One domain claim expiry pass as if it were `now`: unverified claims past their lifetime removed; how many. */
  expireDomainClaims(now: Date): Promise<number>;
}

/** Starts compute: its schema, its cluster, its routes, and the reconciler in the background. */
export function start(config: ComputeConfig, options: StartOptions = {}): Promise<RunningService & ComputeLevers> {
  return startService<ComputeLevers>({
    name: 'compute',
    config,
    httpPort: config.PIER_COMPUTE_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: options.logDestination,
    async wire({ db, logger, relay, metrics, leases, onStop }) {
      watchCounts(metrics, {
        name: 'pier_compute_services',
        help: 'Services (not deleted) by status',
        label: 'status',
        known: SERVICE_STATUSES.filter((s) => s !== 'deleted'),
        read: () => servicesByStatus(db),
      });
      watchCounts(metrics, {
        name: 'pier_compute_builds',
        help: 'Builds waiting (queued) or running',
        label: 'status',
        known: ['queued', 'running'],
        read: () => unfinishedBuilds(db),
      });
      const secrets = createSecretsPort(config, grpcClientMetric(metrics));
      onStop('secrets client', () => secrets.close());
      const clusterCalls = clusterCallMetric(metrics);
      const store = new KnexComputeStore(db);
      const cluster = createCluster(config, secrets.port, logger, clusterCalls, (ids) => store.knownServiceIds(ids));
      const edge = createEdge(config, db, logger);
      const dockerEdge = edge.port instanceof DockerEdge ? edge.port : null;
      if (dockerEdge) onStop('edge route DNS', () => dockerEdge.close());
      if (dockerEdge && cluster instanceof DockerCluster) cluster.drainer = (ids) => dockerEdge.drain(ids);
      // One change per service across every instance of compute (kit's leases.ts).
      const locks = new ResourceLocks(leases, logger);
      // Live log lines reach followers on every instance, whichever one collects them.
      const logFanout = new NatsLogFanout(natsTarget(config), leases.holder, logger);
      logFanout.start();
      onStop('live log lines', () => logFanout.stop());
      const ctx: ComputeContext = {
        store,
        cluster,
        secrets: secrets.port,
        shell: createShell(config),
        logs: {
          source: createLogSource(config, logger),
          store: new KnexLogStore(db),
          feed: new LogFeed(logFanout),
          retentionDays: config.PIER_COMPUTE_LOG_RETENTION_DAYS,
        },
        builds: createBuilds(config, db, logger),
        edge,
        uptime: createUptime(config, db, publicUrlTarget(edge)),
        disks: createDiskBackups(config, db, logger, locks),
        metrics: createMetrics(config, db, logger),
        elastic: null,
        log: logger,
        locks,
        eventsWritten: () => relay.poke(),
        now: () => new Date(),
      };
      const elastic = await createElastic(config, ctx, edge.port, metrics, logger);
      if (elastic) {
        ctx.elastic = elastic.port;
        onStop('activator', () => elastic.activator.close());
      }
      // The main adapter times each Engine or Kubernetes API call; these, each of their calls.
      ctx.shell = timedPort(ctx.shell, 'shell', clusterCalls);
      ctx.logs.source = timedPort(ctx.logs.source, 'logs', clusterCalls);
      if (ctx.builds.builder) ctx.builds.builder = timedPort(ctx.builds.builder, 'builds', clusterCalls);
      if (ctx.edge.port) ctx.edge.port = timedPort(ctx.edge.port, 'edge', clusterCalls);
      ctx.disks.port = timedPort(ctx.disks.port, 'disks', clusterCalls);
      ctx.metrics.usage = timedPort(ctx.metrics.usage, 'metrics', clusterCalls);
      const builds = new BuildWorker(ctx, logger, config.PIER_BUILD_INTERVAL_MS);
      const edgeWorker = new EdgeWorker(ctx, logger, config.PIER_EDGE_SYNC_INTERVAL_MS);
      // The queue and the edge run in one instance: a poke received by another reaches it.
      const pokes = createPokes(db, leases.holder, logger, builds, edgeWorker);
      pokes.listener.start();
      onStop('pokes', () => pokes.listener.stop());
      ctx.builds.runner = pokes.runner;
      ctx.edge.syncer = pokes.syncer;
      const diskBackups = new DiskBackupWorker(ctx, logger, config.PIER_COMPUTE_BACKUP_INTERVAL_MS);
      // Backups and restores a request started go on when another instance takes the scheduler; they stop with the process.
      onStop('disk backup jobs', () => ctx.disks.jobs.stop());
      const claimExpiry = new ClaimExpiry(ctx, logger);
      return {
        routes: computeRoutes(ctx),
        upgrades: computeUpgrades(ctx, { idleMs: config.PIER_COMPUTE_EXEC_IDLE_TIMEOUT_SECONDS * 1000, maxMs: config.PIER_COMPUTE_EXEC_MAX_SECONDS * 1000 }),
        background: [
          cluster,
          // One instance at a time runs each of these (a lease each, `leader:<name>`, handed
          // over when its holder stops or dies): see the README's "Several instances".
          leaderOnly(
            leases,
            'reconciler',
            computeReconciler(ctx, {
              intervalMs: config.PIER_COMPUTE_RECONCILE_INTERVAL_MS,
              graceMs: config.PIER_COMPUTE_PENDING_GRACE_SECONDS * 1000,
              sweepEveryMs: config.PIER_COMPUTE_SWEEP_INTERVAL_SECONDS * 1000,
            }),
            logger,
          ),
          leaderOnly(leases, 'disk-backups', diskBackups, logger),
          leaderOnly(leases, 'builds', builds, logger),
          leaderOnly(leases, 'edge', edgeWorker, logger),
          leaderOnly(leases, 'claim-expiry', claimExpiry, logger),
          // The passes only: each instance's activator holds and counts its own requests, and wakes.
          ...(elastic ? [leaderOnly(leases, 'elastic', elastic.controller, logger)] : []),
          leaderOnly(leases, 'log-retention', new LogRetention(ctx, logger), logger),
          // One collector, so no replica is read and no request counted twice; rows only add.
          leaderOnly(leases, 'metrics', new MetricsCollector(ctx, logger), logger),
          leaderOnly(leases, 'metrics-rollup', new MetricsRollup(ctx, logger), logger),
          // In every instance: it claims its checks with SKIP LOCKED, each check once.
          new UptimeChecker(ctx, logger, config.PIER_UPTIME_TICK_MS),
          leaderOnly(
            leases,
            'log-collector',
            new LogCollector(ctx, logger, {
              batchLines: config.PIER_COMPUTE_LOG_BATCH_LINES,
              flushMs: config.PIER_COMPUTE_LOG_FLUSH_MS,
              scanMs: config.PIER_COMPUTE_LOG_SCAN_MS,
            }),
            logger,
          ),
        ],
        checks: { cluster: () => cluster.ping() },
        keepAliveMs: config.PIER_COMPUTE_SSE_KEEPALIVE_MS,
        describe: { cluster: cluster.kind, elastic: elastic ? 'on' : 'off' },
        extra: {
          runDiskBackupsDue: (now: Date) => diskBackups.runDue(now),
          expireDomainClaims: (now: Date) => claimExpiry.pass(now),
          sleepNow: (serviceId: string) => (elastic ? elastic.controller.sleepNow(serviceId) : Promise.resolve()),
        },
      };
    },
  });
}
