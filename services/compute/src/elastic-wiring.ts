// The elastic half of compute's wiring (docker with its edge only): the activator the edge
// sends elastic services' requests to, the ElasticPort over it and the docker adapter (which
// also reads workers' CPU), and the controller (domain/elastic/elastic-controller.ts). On
// kubernetes, or with PIER_EDGE=off, there is none: services keep the replicas their
// configuration says.
import { latencyHistogram, type Logger } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import type { ComputeContext } from './domain/context.ts';
import type { ElasticPort } from './domain/elastic/elastic-port.ts';
import { ElasticController } from './domain/elastic/elastic-controller.ts';
import { DockerCluster } from './cluster/docker.ts';
import { DockerEdge } from './cluster/docker-edge.ts';
import { Activator } from './edge/activator.ts';

export interface Elastic {
  port: ElasticPort;
  controller: ElasticController;
  activator: Activator;
}

/** The activator listening where the edge container reaches it, and the port over it; null when this cluster has no activator. */
export async function createElastic(
  config: ComputeConfig,
  ctx: Omit<ComputeContext, 'elastic'>,
  edge: unknown,
  metrics: Parameters<typeof latencyHistogram>[0],
  logger: Logger,
): Promise<Elastic | null> {
  const cluster = ctx.cluster;
  if (!(cluster instanceof DockerCluster) || !(edge instanceof DockerEdge) || config.PIER_COMPUTE_ELASTIC === 'off') return null;
  const observeWake = latencyHistogram(metrics, 'pier_compute_wake_seconds', 'How long requests to a sleeping service waited for it to wake (cold starts)', []);
  // The activator asks the controller to wake; the controller works through the port over the activator.
  const late: { controller?: ElasticController } = {};
  const activator = new Activator({
    list: (serviceId, vpcId) => cluster.replicaAddresses(serviceId, vpcId),
    wake: (serviceId) => late.controller!.wake(serviceId),
    holdMs: config.PIER_COMPUTE_WAKE_TIMEOUT_SECONDS * 1000,
    observeWake: (seconds) => observeWake({}, seconds),
    logger,
  });
  let host: string;
  let listening: number;
  try {
    host = await edge.bridgeGateway();
    listening = await activator.listen(host);
  } catch (err) {
    // Compute still serves everything else: services keep the replicas their configuration says.
    logger.error({ err: String(err) }, 'elastic services: the activator cannot listen where the edge reaches it; sleep, wake and autoscaling are off');
    return null;
  }
  edge.activatorAddress = `${host}:${listening}`;
  logger.info({ address: edge.activatorAddress }, 'elastic services: the activator listens for the edge');
  const port: ElasticPort = {
    async scale(spec, replicas) {
      try {
        await cluster.scale(spec, replicas);
      } finally {
        activator.scaled(spec.serviceId);
      }
    },
    traffic: (serviceId) => activator.traffic(serviceId),
    drain: (serviceId, keep) => activator.drain(serviceId, keep),
    cpu: (serviceId) => cluster.replicaCpu(serviceId),
    shells: new Map(),
  };
  const controller = new ElasticController({ ...ctx, elastic: port }, logger, {
    tickMs: config.PIER_COMPUTE_ELASTIC_TICK_MS,
    downDelayMs: config.PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS * 1000,
    workerCpuTarget: config.PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT / 100,
  });
  late.controller = controller;
  return { port, controller, activator };
}
