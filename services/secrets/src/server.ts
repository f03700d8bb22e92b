import {
  close,
  createDb,
  createLogger,
  IdentityVerifier,
  listen,
  migrate,
  OutboxRelay,
  startGrpcServer,
  stopGrpcServer,
  type RunningService,
} from '@pier/kit';
import type { SecretsConfig } from './config.ts';
import { secretStoreFor } from './cluster/select.ts';
import type { SecretStorePort } from './cluster/port.ts';
import { Reconciler, type ReconcilerOptions } from './domain/reconciler.ts';
import { Secrets } from './domain/secrets.ts';
import { CallerCheck } from './grpc/caller.ts';
import { secretsGrpcService } from './grpc/secrets-grpc.ts';
import { buildApp } from './app.ts';
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

/** Starts secrets: migrates its schema, reconciles what a crash left pending, then serves HTTP and gRPC. */
export async function start(config: SecretsConfig, opts: StartOptions = {}): Promise<RunningSecrets> {
  const logger = createLogger('secrets', config.PIER_LOG_LEVEL, opts.logDestination);
  const db = createDb(config.PIER_DATABASE_URL, SCHEMA);
  // Whatever has started is stopped again if a later step fails (a port in use, a bad key).
  const stops: (() => Promise<unknown>)[] = [() => db.destroy()];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  try {
    await migrate(db, SCHEMA, migrations);
    const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
    const caller = await CallerCheck.create(config.PIER_COMPUTE_SERVICE_PUBLIC_KEY);
    if (!config.PIER_COMPUTE_SERVICE_PUBLIC_KEY) logger.warn('PIER_COMPUTE_SERVICE_PUBLIC_KEY is not set: every gRPC call will be refused');
    const store = opts.store ?? secretStoreFor(config);
    const records = new KnexSecretsStore(db);

    const relay = new OutboxRelay(db, 'secrets', config.PIER_NATS_URL, logger);
    relay.start();
    stops.push(() => relay.stop());
    const poke = () => relay.poke();
    const secrets = new Secrets(records, store, logger, poke);
    const reconciler = new Reconciler(records, store, logger, poke, opts.reconciler);
    reconciler.start(config.PIER_SECRETS_RECONCILE_INTERVAL_SECONDS * 1000);
    stops.push(() => reconciler.stop());

    const app = buildApp({
      logger,
      verifier,
      secrets,
      countInVpc: (vpcId) => records.countInVpc(vpcId),
      health: async () => {
        await db.raw('select 1');
      },
    });
    const grpcServer = await startGrpcServer(config.PIER_BIND_HOST, config.PIER_SECRETS_GRPC_PORT, [secretsGrpcService(secrets, caller)]);
    stops.push(() => stopGrpcServer(grpcServer.server));
    const { server, port } = await listen(app, config.PIER_SECRETS_HTTP_PORT, config.PIER_BIND_HOST);
    stops.push(() => close(server));
    logger.info({ port, grpcPort: grpcServer.port, cluster: store.kind }, 'secrets listening');
    return {
      name: 'secrets',
      httpPort: port,
      grpcPort: grpcServer.port,
      reconcile: () => reconciler.runOnce(),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
