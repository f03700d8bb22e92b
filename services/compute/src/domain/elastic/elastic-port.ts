// What the elastic controller (elastic-controller.ts) needs of the world: the cluster to
// run a number of a deployment's replicas and to say how much CPU a worker's replicas use,
// and the edge's activator, which sees every request of an elastic web service
// (edge/activator.ts), to say how busy each service is and to stop sending to replicas
// about to go. The controller scales web services on both clusters; workers on docker
// only, as the HorizontalPodAutoscaler scales them on kubernetes.
import type { WorkloadSpec } from '../cluster-port.ts';

export interface ServiceTraffic {
  /** Requests (and WebSockets, event streams) in flight through the edge now. */
  inFlight: number;
  /** The most in flight at once since the last read: a burst between two reads still counts. */
  peak: number;
  /** When the last request ended or began, ms since the epoch; 0 if none was seen. */
  lastActiveAt: number;
}

export interface ElasticPort {
  /**
   * True: the controller also scales workers, on the CPU `cpu` reads (docker). False: the
   * cluster's own autoscaler does (kubernetes' HorizontalPodAutoscaler, on CPU). Web
   * services are always the controller's: the activator counts their requests.
   */
  readonly scalesWorkers: boolean;
  /** Runs replicas 0..n-1 of the spec's deployment; those from n up are stopped (kept for the next start). */
  scale(spec: WorkloadSpec, replicas: number): Promise<void>;
  /** The service's traffic as the activator counts it; reading resets `peak`. */
  traffic(serviceId: string): ServiceTraffic;
  /** Stops sending new requests to replicas from index `keep` up, and resolves once their requests in flight finished (or a deadline passed). */
  drain(serviceId: string, keep: number): Promise<void>;
  /**
   * The CPU each running replica of the service used since the previous call, as a fraction
   * of the CPU it was given (its limit, else one core): 1 is all of it. A replica read for
   * the first time (or restarted since) has no use yet and is left out. Workers only: what
   * scales a web service is its requests.
   */
  cpu(serviceId: string): Promise<number[]>;
  /** Open shells per service id (exec.ts counts them): a shell keeps an on_demand service awake. */
  readonly shells: Map<string, number>;
}
