// What the elastic controller (elastic-controller.ts) needs of the world: the cluster to
// run a number of a deployment's replicas, and the edge's activator, which sees every
// request of an elastic service (edge/activator.ts), to say how busy each service is and to
// stop sending to replicas about to go. Only the docker adapter has both; on kubernetes the
// HorizontalPodAutoscaler scales and the context has no ElasticPort.
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
  /** Runs replicas 0..n-1 of the spec's deployment; those from n up are stopped (kept for the next start). */
  scale(spec: WorkloadSpec, replicas: number): Promise<void>;
  /** The service's traffic as the activator counts it; reading resets `peak`. */
  traffic(serviceId: string): ServiceTraffic;
  /** Stops sending new requests to replicas from index `keep` up, and resolves once their requests in flight finished (or a deadline passed). */
  drain(serviceId: string, keep: number): Promise<void>;
  /** Open shells per service id (exec.ts counts them): a shell keeps an on_demand service awake. */
  readonly shells: Map<string, number>;
}
