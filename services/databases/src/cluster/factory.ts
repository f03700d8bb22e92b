import type { Logger } from '@pier/kit';
import type { DatabasesConfig } from '../config.ts';
import type { DatabaseCluster } from '../domain/cluster-port.ts';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { DockerCluster } from './docker.ts';
import { KubernetesCluster } from './kubernetes.ts';
import { BuiltinKubernetesCluster } from './kubernetes-builtin.ts';
import { describeModes, KubernetesModes, OperatorDetector } from './kubernetes-modes.ts';
import { s3StoreOf } from './backup-store.ts';

/** The adapter PIER_CLUSTER names; everything it creates carries the installation's label. */
export function createCluster(config: DatabasesConfig, installation: string, logger?: Logger): DatabaseCluster {
  const s3 = s3StoreOf(config);
  if (config.PIER_CLUSTER === 'kubernetes') {
    const kc = kubeConfigFrom(config.PIER_KUBECONFIG);
    const domains = { postgresql: config.PIER_POSTGRES_EXTERNAL_DOMAIN, mysql: config.PIER_MYSQL_EXTERNAL_DOMAIN };
    const clusterNetworks = config.PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS;
    const watch = config.PIER_DATABASES_KUBE_WATCH === 'on' && logger ? { log: logger } : undefined;
    const modes = new KubernetesModes({
      setting: config.PIER_DATABASES_KUBERNETES_OPERATOR,
      detector: new OperatorDetector(kc, installation),
      operator: () =>
        new KubernetesCluster(kc, {
          installation,
          storageClass: config.PIER_DATABASES_STORAGE_CLASS,
          clusterNetworks,
          domains,
          backupStore: s3,
          watch,
        }),
      builtin: () =>
        new BuiltinKubernetesCluster(kc, {
          installation,
          postgresImage: config.PIER_DATABASES_POSTGRES_IMAGE,
          mysqlImage: config.PIER_DATABASES_MYSQL_IMAGE,
          storageClass: config.PIER_DATABASES_STORAGE_CLASS,
          clusterNetworks,
          externalService: config.PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE,
          externalAddress: config.PIER_DATABASES_KUBERNETES_EXTERNAL_ADDRESS,
          domains,
          backupStore: s3,
          watch,
        }),
      decided: (chosen) => logger?.info({ modes: chosen }, `databases on kubernetes: ${describeModes(chosen)}`),
    });
    // Chosen at start when the API server answers; else at the first call (or /readyz) that reaches it.
    modes
      .decide()
      .catch((err: unknown) => logger?.warn({ err }, "databases on kubernetes: the API server did not answer; the engines' modes are chosen once it does"));
    return modes;
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
