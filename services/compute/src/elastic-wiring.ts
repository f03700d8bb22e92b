// The elastic half of compute's wiring: the activator the edge sends elastic services'
// requests to, the ElasticPort over it and the cluster adapter, and the controller
// (domain/elastic/elastic-controller.ts).
// - docker (with its edge): the activator listens on Docker's default bridge, where the
//   edge container reaches it; the controller sleeps, wakes and autoscales (web services on
//   their requests, workers on their CPU, which the adapter reads).
// - kubernetes (with its edge and PIER_COMPUTE_ACTIVATOR_ADDRESS): the activator listens on
//   compute's pod address, which the elastic web services' Ingresses reach through a Service
//   in their namespace; the controller sleeps, wakes and autoscales them on their requests,
//   and the HorizontalPodAutoscaler scales workers on CPU.
// Otherwise (PIER_EDGE=off, PIER_COMPUTE_ELASTIC=off) there is none: services keep the
// replicas their configuration says.
import { latencyHistogram, type Logger } from '@pier/kit';
import type { ComputeConfig } from './config.ts';
import type { ComputeContext } from './domain/context.ts';
import type { ElasticPort } from './domain/elastic/elastic-port.ts';
import { ElasticController } from './domain/elastic/elastic-controller.ts';
import { DockerCluster } from './cluster/docker.ts';
import { DockerEdge } from './cluster/docker-edge.ts';
import { KubernetesCluster } from './cluster/kubernetes.ts';
import { KubernetesEdge } from './cluster/kubernetes-edge.ts';
import { Activator, type ActivatorOptions } from './edge/activator.ts';

export interface Elastic {
  port: ElasticPort;
  controller: ElasticController;
  activator: Activator;
}

/** What differs between the clusters: where the activator listens and how it is told to the edge. */
interface Placement {
  cluster: DockerCluster | KubernetesCluster;
  route: ActivatorOptions['route'];
  host(): Promise<string>;
  port: number;
  /** The edge learns where the activator listens. */
  announce(host: string, port: number): void;
  scalesWorkers: boolean;
  cpu: ElasticPort['cpu'];
}

function placementOf(config: ComputeConfig, cluster: unknown, edge: unknown, logger: Logger): Placement | null {
  if (cluster instanceof DockerCluster && edge instanceof DockerEdge) {
    return {
      cluster,
      route: (host) => edge.routeFor(host),
      host: () => edge.bridgeGateway(),
      port: config.PIER_COMPUTE_ACTIVATOR_PORT,
      announce: (_host, port) => (edge.activatorPort = port),
      scalesWorkers: true,
      cpu: (serviceId) => cluster.replicaCpu(serviceId),
    };
  }
  if (cluster instanceof KubernetesCluster && edge instanceof KubernetesEdge) {
    const address = config.PIER_COMPUTE_ACTIVATOR_ADDRESS;
    if (!address) {
      logger.warn('elastic services: no PIER_COMPUTE_ACTIVATOR_ADDRESS (compute pod IP), so no activator: on_demand services stay awake at their floor');
      return null;
    }
    return {
      cluster,
      route: (host) => edge.routeFor(host),
      host: async () => address,
      port: config.PIER_COMPUTE_ACTIVATOR_PORT,
      announce: (host, port) => (edge.activator = { addresses: [host], port }),
      scalesWorkers: false,
      // Workers are the HorizontalPodAutoscaler's here.
      cpu: async () => [],
    };
  }
  return null;
}

/** The activator listening where the edge reaches it, and the port over it; null when this cluster has no activator. */
export async function createElastic(
  config: ComputeConfig,
  ctx: Omit<ComputeContext, 'elastic'>,
  edge: unknown,
  metrics: Parameters<typeof latencyHistogram>[0],
  logger: Logger,
): Promise<Elastic | null> {
  if (config.PIER_COMPUTE_ELASTIC === 'off') return null;
  const place = placementOf(config, ctx.cluster, edge, logger);
  if (!place) return null;
  const { cluster } = place;
  const observeWake = latencyHistogram(metrics, 'pier_compute_wake_seconds', 'How long requests to a sleeping service waited for it to wake (cold starts)', []);
  // The activator asks the controller to wake; the controller works through the port over the activator.
  const late: { controller?: ElasticController } = {};
  const activator = new Activator({
    list: (serviceId, vpcId) => cluster.replicaAddresses(serviceId, vpcId),
    route: place.route,
    wake: (serviceId) => late.controller!.wake(serviceId),
    holdMs: config.PIER_COMPUTE_WAKE_TIMEOUT_SECONDS * 1000,
    observeWake: (seconds) => observeWake({}, seconds),
    logger,
  });
  let host: string;
  let listening: number;
  try {
    host = await place.host();
    listening = await activator.listen(host, place.port);
  } catch (err) {
    // Compute still serves everything else: services keep the replicas their configuration says.
    logger.error({ err: String(err) }, 'elastic services: the activator cannot listen where the edge reaches it; sleep, wake and autoscaling are off');
    return null;
  }
  place.announce(host, listening);
  logger.info({ address: `${host}:${listening}`, cluster: ctx.cluster.kind }, 'elastic services: the activator listens for the edge');
  const port: ElasticPort = {
    scalesWorkers: place.scalesWorkers,
    async scale(spec, replicas) {
      try {
        await cluster.scale(spec, replicas);
      } finally {
        activator.scaled(spec.serviceId);
      }
    },
    traffic: (serviceId) => activator.traffic(serviceId),
    drain: (serviceId, keep) => activator.drain(serviceId, keep),
    cpu: place.cpu,
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
