import type { Logger } from '@pier/kit';
import type { ComputeConfig } from '../config.ts';
import type { SecretsPort } from '../domain/secrets-port.ts';
import type { ClusterPort } from '../domain/cluster-port.ts';
import { DockerCluster } from './docker.ts';
import { KubernetesCluster } from './kubernetes.ts';

export function createCluster(config: ComputeConfig, secrets: SecretsPort, logger: Logger): ClusterPort {
  if (config.PIER_CLUSTER === 'kubernetes') return KubernetesCluster.fromKubeconfig(config.PIER_KUBECONFIG, logger);
  return new DockerCluster({ host: config.PIER_DOCKER_HOST, secrets, logger, cronIntervalMs: config.PIER_COMPUTE_CRON_INTERVAL_MS });
}
