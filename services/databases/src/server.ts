import { ResourceLocks, leaderOnly, clusterCallMetric, grpcClientMetric, startService, timedPort, watchCounts, type RunningService } from '@pier/kit';
import { STATUSES } from './domain/database.ts';
import { databasesByStatus } from './store/status-counts.ts';
import { pendingGraceMs, type DatabasesConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexDatabasesStore } from './store/knex-store.ts';
import { createCluster } from './cluster/factory.ts';
import { PostgresSql } from './sql/postgres.ts';
import { MysqlSql } from './sql/mysql.ts';
import type { DatabaseCluster } from './domain/cluster-port.ts';
import type { DatabasesContext } from './domain/context.ts';
import { databasesReconciler } from './domain/reconciler.ts';
import { BackupWorker } from './domain/backup-worker.ts';
import { GrpcVpcDirectory, UnconfiguredVpcDirectory } from './clients/auth-vpcs.ts';
import { databasesRoutes } from './app.ts';
import { startPostgresListener } from './listener-wiring.ts';

export interface StartOptions {
  /**
   * Builds the cluster adapter instead of PIER_CLUSTER (tests: a docker client that counts
   * its calls, a fake Kubernetes API). It gets this installation's id to label with.
   */
  cluster?: (installation: string) => DatabaseCluster;
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
}

/** Starts the databases service: its schema, its cluster, its routes, and the reconciler in the background. */
export function start(config: DatabasesConfig, options: StartOptions = {}): Promise<RunningService> {
  return startService({
    name: 'databases',
    config,
    httpPort: config.PIER_DATABASES_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: options.logDestination,
    async wire({ db, logger, relay, metrics, leases, onStop }) {
      watchCounts(metrics, {
        name: 'pier_databases_databases',
        help: 'Databases (not deleted) by status',
        label: 'status',
        known: STATUSES.filter((s) => s !== 'deleted'),
        read: () => databasesByStatus(db),
      });
      if (config.PIER_DATABASES_PENDING_GRACE_MS !== undefined && config.PIER_DATABASES_PENDING_GRACE_SECONDS === undefined) {
        logger.warn('PIER_DATABASES_PENDING_GRACE_MS is deprecated: set PIER_DATABASES_PENDING_GRACE_SECONDS instead');
      }
      const store = new KnexDatabasesStore(db);
      const installation = await store.installationId();
      // Timed at the port's grain (apply, observe, backup…): the adapters call client libraries directly.
      const adapter = options.cluster?.(installation) ?? createCluster(config, installation, logger);
      const cluster = timedPort(adapter, 'cluster', clusterCallMetric(metrics));
      onStop('cluster adapter', () => cluster.close());
      const listener = await startPostgresListener(config, adapter, { store }, logger);
      if (listener) onStop('postgres listener', () => listener.close());
      const postgresSql = new PostgresSql();
      onStop('console sessions', () => postgresSql.close());
      let vpcs: GrpcVpcDirectory | UnconfiguredVpcDirectory = new UnconfiguredVpcDirectory();
      if (config.PIER_AUTH_GRPC_URL) {
        const client = new GrpcVpcDirectory(config.PIER_AUTH_GRPC_URL, undefined, grpcClientMetric(metrics));
        onStop('auth client', () => client.close());
        vpcs = client;
      }
      const ctx: DatabasesContext = {
        store,
        cluster,
        sql: { postgresql: postgresSql, mysql: new MysqlSql() },
        vpcs,
        domains: { postgresql: config.PIER_POSTGRES_EXTERNAL_DOMAIN, mysql: config.PIER_MYSQL_EXTERNAL_DOMAIN },
        console: { timeoutMs: config.PIER_DATABASES_QUERY_TIMEOUT_MS, rowCap: config.PIER_DATABASES_QUERY_ROW_CAP },
        log: logger,
        // One change per database across every instance (kit's leases.ts).
        locks: new ResourceLocks(leases, logger),
        eventsWritten: () => relay.poke(),
        now: () => new Date(),
        deadlines: {
          provisionMs: config.PIER_DATABASES_PROVISION_TIMEOUT_SECONDS * 1000,
          deletedBackupsMs: config.PIER_DATABASES_DELETED_BACKUP_RETENTION_SECONDS * 1000,
        },
      };
      return {
        routes: databasesRoutes(ctx),
        background: [
          // One instance at a time runs each (a lease each, handed over when its holder stops or dies).
          leaderOnly(
            leases,
            'reconciler',
            databasesReconciler(ctx, {
              intervalMs: config.PIER_DATABASES_RECONCILE_INTERVAL_MS,
              graceMs: pendingGraceMs(config),
              sweepEveryMs: config.PIER_DATABASES_SWEEP_INTERVAL_SECONDS * 1000,
            }),
            logger,
          ),
          leaderOnly(leases, 'backup-scheduler', new BackupWorker(ctx, config.PIER_DATABASES_BACKUP_SCHEDULER_INTERVAL_MS), logger),
        ],
        // The answer names how each engine runs on kubernetes (operator or built-in).
        checks: { cluster: () => cluster.ping() },
        describe: { cluster: cluster.capabilities.adapter, installation },
      };
    },
  });
}
