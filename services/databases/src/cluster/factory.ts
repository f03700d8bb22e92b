import type { DatabasesConfig } from '../config.ts';
import type { DatabaseCluster } from '../domain/cluster-port.ts';
import { DockerCluster } from './docker.ts';
import { KubernetesCluster } from './kubernetes.ts';
import { s3StoreOf } from './backup-store.ts';

/** The adapter PIER_CLUSTER names; everything it creates carries the installation's label. */
export function createCluster(config: DatabasesConfig, installation: string): DatabaseCluster {
  const s3 = s3StoreOf(config);
  if (config.PIER_CLUSTER === 'kubernetes') {
    return KubernetesCluster.fromKubeconfig(config.PIER_KUBECONFIG, {
      installation,
      storageClass: config.PIER_DATABASES_STORAGE_CLASS,
      domains: { postgresql: config.PIER_POSTGRES_EXTERNAL_DOMAIN, mysql: config.PIER_MYSQL_EXTERNAL_DOMAIN },
      backupStore: s3,
    });
  }
  return new DockerCluster({
    installation,
    postgresImage: config.PIER_DATABASES_POSTGRES_IMAGE,
    mysqlImage: config.PIER_DATABASES_MYSQL_IMAGE,
    publishAddress: config.PIER_DATABASES_PUBLISH_ADDRESS,
    // With a domain, PostgreSQL's clients outside come through Pier's SNI listener (server.ts).
    postgresListener: config.PIER_POSTGRES_EXTERNAL_DOMAIN !== undefined,
    labels: config.PIER_DATABASES_CONTAINER_LABELS,
    repository: s3 ? { kind: 's3', store: s3 } : { kind: 'volume', volume: config.PIER_DATABASES_BACKUP_VOLUME },
  });
}
