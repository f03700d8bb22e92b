import { vpcUsageRoute, createDb, createLogger, createServiceApp, IdentityVerifier, listen, close, migrate, OutboxRelay, type RunningService } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';

/** Starts compute: migrates its schema, then serves. Endpoints arrive with their issue. */
export async function start(config: ComputeConfig): Promise<RunningService> {
  const logger = createLogger('compute', config.PIER_LOG_LEVEL);
  const db = createDb(config.PIER_DATABASE_URL, SCHEMA);
  await migrate(db, SCHEMA, migrations);
  const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
  const relay = new OutboxRelay(db, 'compute', config.PIER_NATS_URL, logger);
  relay.start();
  const app = createServiceApp({
    service: 'compute',
    logger,
    verifier,
    // Compute holds no services until its issue lands, so a VPC never has any here yet.
    routes: [vpcUsageRoute(async () => 0)],
    health: async () => {
      await db.raw('select 1');
    },
  });
  const { server, port } = await listen(app, config.PIER_COMPUTE_HTTP_PORT, config.PIER_BIND_HOST);
  logger.info({ port }, 'compute listening');
  return {
    name: 'compute',
    httpPort: port,
    async stop() {
      await close(server);
      await relay.stop();
      await db.destroy();
    },
  };
}
