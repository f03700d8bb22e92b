import { clusterCallMetric, leaderOnly, startService, timedPort, type ReconcileReport, type ReconcileTimes, type RunningService } from '@pier/kit';
import type { SecretsConfig } from './config.ts';
import { createCluster } from './cluster/factory.ts';
import type { SecretsCluster } from './domain/cluster-port.ts';
import type { SecretsContext } from './domain/context.ts';
import { secretsReconciler } from './domain/reconciler.ts';
import { CallerCheck } from './grpc/caller.ts';
import { secretsGrpcService } from './grpc/secrets-grpc.ts';
import { secretsRoutes } from './app.ts';
import { KnexSecretsStore } from './store/store.ts';
import { migrations, SCHEMA } from './store/migrations.ts';

export interface StartOptions {
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
  /** The cluster's secret store; built from the configuration (PIER_CLUSTER) when absent. */
  cluster?: (installation: string) => SecretsCluster;
  /** Tests' lever: the reconciler's times instead of the configured ones. */
  reconciler?: Partial<ReconcileTimes>;
}

export interface RunningSecrets extends RunningService {
  grpcPort: number;
  /** Runs one reconcile pass now (operators' and tests' lever). */
  reconcile(): Promise<ReconcileReport>;
}

/** Starts secrets: its schema, its store, the reconciler (which first finishes what a crash left pending), HTTP and gRPC. */
export async function start(config: SecretsConfig, opts: StartOptions = {}): Promise<RunningSecrets> {
  const running = await startService({
    name: 'secrets',
    config,
    httpPort: config.PIER_SECRETS_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: opts.logDestination,
    async wire({ db, logger, relay, metrics, leases }) {
      const caller = await CallerCheck.create(config.PIER_COMPUTE_SERVICE_PUBLIC_KEY);
      if (!config.PIER_COMPUTE_SERVICE_PUBLIC_KEY) logger.warn('PIER_COMPUTE_SERVICE_PUBLIC_KEY is not set: every gRPC call will be refused');
      // Timed as `store.<method>`: the operation names /metrics has always given the secret store's calls.
      const store = new KnexSecretsStore(db);
      const installation = await store.installationId();
      const cluster = timedPort((opts.cluster ?? ((id) => createCluster(config, id)))(installation), 'store', clusterCallMetric(metrics));
      const ctx: SecretsContext = {
        store,
        cluster,
        log: logger,
        eventsWritten: () => relay.poke(),
        now: () => new Date(),
      };
      const reconciler = secretsReconciler(ctx, {
        intervalMs: config.PIER_SECRETS_RECONCILE_INTERVAL_SECONDS * 1000,
        graceMs: config.PIER_SECRETS_PENDING_GRACE_SECONDS * 1000,
        sweepEveryMs: config.PIER_SECRETS_SWEEP_INTERVAL_SECONDS * 1000,
        ...opts.reconciler,
      });
      return {
        routes: secretsRoutes(ctx),
        grpc: { port: config.PIER_SECRETS_GRPC_PORT, services: [secretsGrpcService(ctx, caller)] },
        // Through describeError: a store's failure may echo what it was sent. The check keeps
        // its name `store` (readyz answers it): the secret store is what it asks.
        checks: { store: () => cluster.ping().catch((err: unknown) => Promise.reject(new Error(cluster.describeError(err)))) },
        // One instance at a time reconciles (a lease, handed over when its holder stops or dies).
        background: [leaderOnly(leases, 'reconciler', reconciler, logger)],
        extra: { reconcile: () => reconciler.runOnce() },
        describe: { cluster: cluster.kind },
      };
    },
  });
  return { ...running, grpcPort: running.grpcPort! };
}
