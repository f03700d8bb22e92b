// The service-metrics half of compute's wiring: the store, the cluster's CPU and memory, and
// where the edge's requests are read — the docker edge's access log; on kubernetes no Pier
// process sees a request the ingress controller sends straight to a pod, so they are read
// from Traefik's metrics when PIER_COMPUTE_INGRESS_METRICS_URLS names them, and are not
// counted otherwise (the API says so rather than show zeros). server.ts runs the collector
// and the rollup (domain/metrics) in the background, each under its lease.
import type { Knex, Logger } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import type { ComputeConfig } from './config.ts';
import type { MetricsDeps } from './domain/metrics/metrics-deps.ts';
import { DockerEngine } from './cluster/docker-engine.ts';
import { DockerUsage } from './cluster/docker-usage.ts';
import { DockerEdgeTraffic } from './cluster/docker-edge-traffic.ts';
import { KubernetesUsage } from './cluster/kubernetes-usage.ts';
import { TraefikEdgeTraffic } from './cluster/traefik-edge-traffic.ts';
import { KnexMetricsStore } from './store/metrics-store.ts';

const KUBERNETES_NO_REQUESTS =
  "requests are not counted on this kubernetes installation: the ingress controller sends them to the service's pods without passing through Pier, and no ingress metrics are configured (PIER_COMPUTE_INGRESS_METRICS_URLS)";
/** A scrape waits this long for one Traefik's answer. */
const INGRESS_METRICS_TIMEOUT_MS = 5000;
const EDGE_OFF = 'requests are counted at the edge, and the edge is off (PIER_EDGE=off)';

export function createMetrics(config: ComputeConfig, db: Knex, log: Logger): MetricsDeps {
  const settings = { sampleMs: config.PIER_COMPUTE_METRICS_SAMPLE_MS, flushMs: config.PIER_COMPUTE_METRICS_FLUSH_MS };
  const store = new KnexMetricsStore(db);
  if (config.PIER_CLUSTER === 'kubernetes') {
    const urls = config.PIER_COMPUTE_INGRESS_METRICS_URLS;
    const traffic = urls.length
      ? new TraefikEdgeTraffic({ urls, intervalMs: config.PIER_COMPUTE_INGRESS_METRICS_INTERVAL_MS, timeoutMs: INGRESS_METRICS_TIMEOUT_MS, log })
      : null;
    return {
      store,
      usage: new KubernetesUsage(kubeConfigFrom(config.PIER_KUBECONFIG)),
      traffic,
      trafficUnavailable: traffic ? null : KUBERNETES_NO_REQUESTS,
      settings,
    };
  }
  const edgeOn = config.PIER_EDGE === 'on';
  return {
    store,
    usage: new DockerUsage(new DockerEngine(config.PIER_DOCKER_HOST, 15_000)),
    traffic: edgeOn ? new DockerEdgeTraffic(config.PIER_DOCKER_HOST, config.PIER_EDGE_CONTAINER) : null,
    trafficUnavailable: edgeOn ? null : EDGE_OFF,
    settings,
  };
}
