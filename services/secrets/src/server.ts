import { clusterCallMetric, startService, timedPort, type RunningService } from '@pier/kit';
import type { SecretsConfig } from './config.ts';
import { secretStoreFor } from './cluster/select.ts';
import type { SecretStorePort } from './domain/store-port.ts';
import { Reconciler, type ReconcilerOptions } from './domain/reconciler.ts';
import { Secrets } from './domain/secrets.ts';
import { CallerCheck } from './grpc/caller.ts';
import { secretsGrpcService } from './grpc/secrets-grpc.ts';
import { secretsRoutes } from './app.ts';
import { KnexSecretsStore } from './store/knex-secrets-store.ts';
import { migrations, SCHEMA } from './store/migrations.ts';

export interface StartOptions {
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
  /** The cluster's secret store; built from the configuration when absent. */
  store?: SecretStorePort;
  reconciler?: ReconcilerOptions;
}

export interface RunningSecrets extends RunningService {
  grpcPort: number;
  /** Runs one reconcile pass now (operators' and tests' lever). */
  reconcile(): ReturnType<Reconciler['runOnce']>;
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
    async wire({ db, logger, relay, metrics }) {
      const caller = await CallerCheck.create(config.PIER_COMPUTE_SERVICE_PUBLIC_KEY);
      if (!config.PIER_COMPUTE_SERVICE_PUBLIC_KEY) logger.warn('PIER_COMPUTE_SERVICE_PUBLIC_KEY is not set: every gRPC call will be refused');
      const store = timedPort(opts.store ?? secretStoreFor(config), 'store', clusterCallMetric(metrics));
      const records = new KnexSecretsStore(db);
      const poke = () => relay.poke();
      const secrets = new Secrets(records, store, logger, poke);
      const reconciler = new Reconciler(records, store, logger, poke, config.PIER_SECRETS_RECONCILE_INTERVAL_SECONDS * 1000, {
        staleAfterMs: config.PIER_SECRETS_PENDING_GRACE_SECONDS * 1000,
        ...opts.reconciler,
      });
      return {
        routes: secretsRoutes(secrets, (vpcId) => records.countInVpc(vpcId)),
        grpc: { port: config.PIER_SECRETS_GRPC_PORT, services: [secretsGrpcService(secrets, caller)] },
        // Through describeError: a store's failure may echo what it was sent.
        checks: { store: () => store.ping().catch((err: unknown) => Promise.reject(new Error(store.describeError(err)))) },
        background: [reconciler],
        extra: { reconcile: () => reconciler.runOnce() },
        describe: { cluster: store.kind },
      };
    },
  });
  return { ...running, grpcPort: running.grpcPort! };
}
