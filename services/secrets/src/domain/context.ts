// What every use case works with, built once in server.ts (no globals), and the errors
// they share.
import { NotFoundError, UnavailableError, type Logger } from '@pier/kit';
import type { SecretsCluster } from './cluster-port.ts';
import type { SecretsStore } from './store-port.ts';

export interface SecretsContext {
  /** Our records: names and key names, never values. */
  store: SecretsStore;
  /** The cluster's secret store: where the values live. */
  cluster: SecretsCluster;
  log: Logger;
  /** Called after a commit that wrote events, so the relay publishes them now rather than at its next pass. */
  eventsWritten(): void;
  now(): Date;
}

export const secretNotFound = () => new NotFoundError('secret not found', 'secret_not_found');

export const clusterUnavailable = () => new UnavailableError("the cluster's secret store cannot be reached; nothing was written", 'cluster_unavailable');
