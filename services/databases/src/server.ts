import { vpcUsageRoute, createDb, createLogger, createServiceApp, IdentityVerifier, listen, close, migrate, OutboxRelay, type RunningService } from '@pier/kit';
import type { DatabasesConfig } from './config.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { KnexDatabasesStore } from './store/knex-store.ts';
import { DockerCluster } from './cluster/docker.ts';
import { KubernetesCluster } from './cluster/kubernetes.ts';
import type { DatabaseCluster } from './cluster/port.ts';
import { PostgresSql } from './sql/postgres.ts';
import { MysqlSql } from './sql/mysql.ts';
import { Databases } from './operations/databases.ts';
import { databaseRoutes } from './http/routes.ts';

export interface StartOptions {
  /** A cluster adapter built by the caller (tests: a docker adapter with test labels). */
  cluster?: DatabaseCluster;
  /** How often a database being created is polled (default 1 s). */
  watchIntervalMs?: number;
}

function clusterFor(config: DatabasesConfig): DatabaseCluster {
  if (config.PIER_CLUSTER === 'kubernetes') {
    return KubernetesCluster.fromKubeconfig(config.PIER_KUBECONFIG, {
      storageClass: config.PIER_DATABASES_STORAGE_CLASS,
      domains: { postgresql: config.PIER_POSTGRES_EXTERNAL_DOMAIN, mysql: config.PIER_MYSQL_EXTERNAL_DOMAIN },
    });
  }
  return new DockerCluster({
    postgresImage: config.PIER_DATABASES_POSTGRES_IMAGE,
    mysqlImage: config.PIER_DATABASES_MYSQL_IMAGE,
    publishAddress: config.PIER_DATABASES_PUBLISH_ADDRESS,
    labels: config.PIER_DATABASES_CONTAINER_LABELS,
  });
}

/** Starts the databases service: migrates its schema, resumes unfinished work, serves. */
export async function start(config: DatabasesConfig, options: StartOptions = {}): Promise<RunningService> {
  const logger = createLogger('databases', config.PIER_LOG_LEVEL);
  const db = createDb(config.PIER_DATABASE_URL, SCHEMA);
  await migrate(db, SCHEMA, migrations);
  const verifier = await IdentityVerifier.fromJwk(config.PIER_IDENTITY_PUBLIC_KEY);
  const relay = new OutboxRelay(db, 'databases', config.PIER_NATS_URL, logger);
  relay.start();
  const cluster = options.cluster ?? clusterFor(config);
  const postgresSql = new PostgresSql();
  const databases = new Databases({
    store: new KnexDatabasesStore(db),
    cluster,
    sql: { postgresql: postgresSql, mysql: new MysqlSql() },
    domains: { postgresql: config.PIER_POSTGRES_EXTERNAL_DOMAIN, mysql: config.PIER_MYSQL_EXTERNAL_DOMAIN },
    console: { timeoutMs: config.PIER_DATABASES_QUERY_TIMEOUT_MS, rowCap: config.PIER_DATABASES_QUERY_ROW_CAP },
    provisionDeadlineMs: config.PIER_DATABASES_PROVISION_TIMEOUT_SECONDS * 1000,
    watchIntervalMs: options.watchIntervalMs ?? 1000,
    logger,
    eventsWritten: () => relay.poke(),
  });
  await databases.recover().catch((err) => logger.warn({ err: String(err) }, 'could not resume unfinished database work'));
  const app = createServiceApp({
    service: 'databases',
    logger,
    verifier,
    routes: [...databaseRoutes(databases), vpcUsageRoute((vpcId) => databases.usage(vpcId))],
    health: async () => {
      await db.raw('select 1');
    },
  });
  const { server, port } = await listen(app, config.PIER_DATABASES_HTTP_PORT, config.PIER_BIND_HOST);
  logger.info({ port, cluster: cluster.capabilities.adapter }, 'databases listening');
  return {
    name: 'databases',
    httpPort: port,
    async stop() {
      await close(server);
      await databases.stop();
      await postgresSql.close();
      await relay.stop();
      await cluster.close();
      await db.destroy();
    },
  };
}
