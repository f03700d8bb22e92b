import { createDb, createLogger, IdentityVerifier, listen, close, migrate, OutboxRelay, type RunningService } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexComputeStore } from './store/store.ts';
import { createCluster } from './cluster/factory.ts';
import { createSecretsPort } from './secrets-client.ts';
import { KeyedMutex } from './domain/locks.ts';
import type { ComputeContext } from './domain/context.ts';
import { createComputeApp } from './app.ts';
import { Reconciler } from './reconciler.ts';

/** Starts compute: migrates its schema, connects its cluster, serves, and reconciles in the background. */
export async function start(config: ComputeConfig): Promise<RunningService> {
  const logger = createLogger('compute', config.PIER_LOG_LEVEL);
  const db = createDb(config.PIER_DATABASE_URL, SCHEMA);
  await migrate(db, SCHEMA, migrations);
  const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
  const relay = new OutboxRelay(db, 'compute', config.PIER_NATS_URL, logger);
  relay.start();
  const secrets = createSecretsPort(config);
  const cluster = createCluster(config, secrets.port, logger);
  cluster.start?.();
  const ctx: ComputeContext = {
    store: new KnexComputeStore(db),
    cluster,
    secrets: secrets.port,
    log: logger,
    locks: new KeyedMutex(),
    eventsWritten: () => relay.poke(),
    now: () => new Date(),
  };
  const reconciler = new Reconciler(ctx, logger, config.PIER_COMPUTE_RECONCILE_INTERVAL_MS);
  reconciler.start();
  const app = createComputeApp(ctx, verifier, logger, async () => {
    await db.raw('select 1');
  });
  const { server, port } = await listen(app, config.PIER_COMPUTE_HTTP_PORT, config.PIER_BIND_HOST);
  logger.info({ port, cluster: cluster.kind }, 'compute listening');
  return {
    name: 'compute',
    httpPort: port,
    async stop() {
      await close(server);
      await reconciler.stop();
      await cluster.stop?.();
      secrets.close();
      await relay.stop();
      await db.destroy();
    },
  };
}
