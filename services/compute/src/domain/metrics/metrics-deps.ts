import type { EdgeTrafficPort, MetricsStore, UsagePort } from './metrics-port.ts';

/** Service metrics' part of the context, built by metrics-wiring.ts. */
export interface MetricsDeps {
  store: MetricsStore;
  usage: UsagePort;
  /** Where the edge's requests are read; null where no Pier process sees them (kubernetes' ingress controller), with why. */
  traffic: EdgeTrafficPort | null;
  trafficUnavailable: string | null;
  settings: {
    /** How often the cluster's CPU and memory are read. */
    sampleMs: number;
    /** How often what was gathered is written. */
    flushMs: number;
  };
}
