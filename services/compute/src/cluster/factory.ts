import type { Logger, UrlGuard } from '@pier/kit';
import path from 'node:path';
import type { ComputeConfig } from '../config.ts';
import type { SecretsPort } from '../domain/env/secrets-port.ts';
import type { ClusterPort } from '../domain/cluster-port.ts';
import type { ShellPort } from '../domain/exec/shell-port.ts';
import type { LogSource } from '../domain/logs/log-port.ts';
import type { BuilderPort } from '../domain/builds/builder-port.ts';
import { DockerCluster } from './docker.ts';
import type { OwnedServices } from './docker-cron.ts';
import { DockerBuilder } from './docker-builds.ts';
import { KubernetesBuilder } from './kubernetes-builds.ts';
import { KubernetesCluster } from './kubernetes.ts';
import { DockerEngine } from './docker-engine.ts';
import type { ClusterCallObserver } from './call-metrics.ts';
import { DockerShell } from './docker-exec.ts';
import { KubernetesShell } from './kubernetes-exec.ts';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { DockerLogSource } from './docker-logs.ts';
import { KubernetesLogSource } from './kubernetes-logs.ts';

/** The host firewall's image on docker, or null when the operator keeps the host's firewall (docker-egress-firewall.ts). */
function egressFirewallImage(config: ComputeConfig): string | null {
  return config.PIER_EGRESS_FIREWALL === 'on' ? config.PIER_EGRESS_FIREWALL_IMAGE : null;
}

/** The cluster port; `observe` is told of each of its API calls (compute's /metrics). */
export function createCluster(
  config: ComputeConfig,
  secrets: SecretsPort,
  logger: Logger,
  observe?: ClusterCallObserver,
  ownedServices?: OwnedServices,
): ClusterPort {
  if (config.PIER_CLUSTER === 'kubernetes')
    return KubernetesCluster.fromKubeconfig(
      config.PIER_KUBECONFIG,
      logger,
      observe,
      { scaleDownDelaySeconds: config.PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS, cpuTargetPercent: config.PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT },
      config.PIER_COMPUTE_KUBE_WATCH === 'on',
    );
  return new DockerCluster({
    observe,
    host: config.PIER_DOCKER_HOST,
    secrets,
    logger,
    cronIntervalMs: config.PIER_COMPUTE_CRON_INTERVAL_MS,
    volumeToolsImage: config.PIER_COMPUTE_BACKUP_IMAGE,
    egressFirewallImage: egressFirewallImage(config),
    ownedServices,
  });
}

/** Shells (exec) on the same cluster. */
export function createShell(config: ComputeConfig): ShellPort {
  if (config.PIER_CLUSTER === 'kubernetes') return new KubernetesShell(kubeConfigFrom(config.PIER_KUBECONFIG));
  return new DockerShell(new DockerEngine(config.PIER_DOCKER_HOST, 15_000));
}

/** Where service logs are read, on the same cluster. */
export function createLogSource(config: ComputeConfig, logger: Logger): LogSource {
  if (config.PIER_CLUSTER === 'kubernetes') return new KubernetesLogSource(kubeConfigFrom(config.PIER_KUBECONFIG));
  return new DockerLogSource(config.PIER_DOCKER_HOST, logger);
}

/** The builder of the same cluster; on kubernetes it needs a registry to push to (null and why, without one). */
export function createBuilder(config: ComputeConfig, guard: UrlGuard, logger: Logger): { builder: BuilderPort | null; unavailableReason?: string } {
  const fetch = { guard, allowHttp: config.PIER_BUILD_ALLOW_HTTP, workDir: path.join(config.PIER_BUILD_WORK_DIR, 'fetched'), logger };
  if (config.PIER_CLUSTER === 'kubernetes') {
    if (!config.PIER_BUILD_REGISTRY) return { builder: null, unavailableReason: 'builds on kubernetes need a registry to push to: set PIER_BUILD_REGISTRY' };
    return {
      builder: new KubernetesBuilder(kubeConfigFrom(config.PIER_KUBECONFIG), {
        ...fetch,
        registry: config.PIER_BUILD_REGISTRY,
        namespace: config.PIER_BUILD_NAMESPACE,
        buildkitImage: config.PIER_BUILDKIT_IMAGE,
        pushImage: config.PIER_BUILD_PUSH_IMAGE,
        pushSecret: config.PIER_BUILD_PUSH_SECRET,
        registryCa: config.PIER_BUILD_REGISTRY_CA,
        buildCapabilities: config.PIER_BUILDKIT_ADD_CAPABILITIES,
        timeoutSeconds: config.PIER_BUILD_TIMEOUT_SECONDS,
        memoryMiB: config.PIER_BUILD_MEMORY_MIB,
      }),
    };
  }
  return {
    builder: new DockerBuilder({
      ...fetch,
      host: config.PIER_DOCKER_HOST,
      memoryMiB: config.PIER_BUILD_MEMORY_MIB,
      egressFirewallImage: egressFirewallImage(config),
    }),
  };
}
