import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { defaultStoreDir, type SecretsConfig } from '../config.ts';
import { DockerSecretStore } from './docker.ts';
import { KubernetesSecretStore } from './kubernetes.ts';
import type { SecretsCluster } from '../domain/cluster-port.ts';

/** The secret store of the configured cluster (PIER_CLUSTER): where the values live. */
export function createCluster(config: SecretsConfig, installation: string): SecretsCluster {
  if (config.PIER_CLUSTER === 'kubernetes') return new KubernetesSecretStore(kubeConfigFrom(config.PIER_KUBECONFIG), installation);
  if (!config.PIER_SECRETS_STORE_KEY) throw new Error('PIER_SECRETS_STORE_KEY is required with PIER_CLUSTER=docker');
  return new DockerSecretStore(config.PIER_SECRETS_STORE_DIR ?? defaultStoreDir(process.env), config.PIER_SECRETS_STORE_KEY);
}
