// Pier's PostgreSQL listener (edge/postgres-listener.ts) on the docker adapter with an
// external domain: one port for every database's clients outside, routed by TLS server
// name, the allowlist judged on the client's own address (domain/external-route.ts).
// On kubernetes each database has load balancers of its own; without a domain (the local
// default) each server publishes a port of its own: no listener then.
import type { Logger } from '@pier/kit';
import type { DatabasesConfig } from './config.ts';
import type { DatabasesContext } from './domain/context.ts';
import { externalRoute } from './domain/external-route.ts';
import { DockerCluster } from './cluster/docker.ts';
import { PostgresListener } from './edge/postgres-listener.ts';

export async function startPostgresListener(
  config: DatabasesConfig,
  cluster: unknown,
  ctx: Pick<DatabasesContext, 'store'>,
  logger: Logger,
): Promise<PostgresListener | null> {
  const domain = config.PIER_POSTGRES_EXTERNAL_DOMAIN;
  if (!(cluster instanceof DockerCluster) || !cluster.listensForPostgres || !domain) return null;
  const listener = new PostgresListener({
    domain,
    logger,
    route: (shortId, readOnly, clientAddress) => externalRoute(ctx, (db, ro) => cluster.listenerTarget(db, ro), shortId, readOnly, clientAddress),
  });
  const address = config.PIER_DATABASES_PUBLISH_ADDRESS;
  let port: number;
  try {
    port = await listener.listen(address, config.PIER_DATABASES_POSTGRES_EXTERNAL_PORT);
  } catch (err) {
    throw new Error(
      `the PostgreSQL listener cannot listen on ${address}:${config.PIER_DATABASES_POSTGRES_EXTERNAL_PORT} (PIER_DATABASES_POSTGRES_EXTERNAL_PORT): ${String(err)}`,
      { cause: err },
    );
  }
  cluster.postgresListenerPort = port;
  logger.info({ address: `${address}:${port}`, domain }, 'postgres listener: external clients are routed by server name');
  return listener;
}
