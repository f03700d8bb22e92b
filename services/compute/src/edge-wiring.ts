// The edge half of compute's wiring: the edge of the configured cluster (or none, with
// PIER_EDGE=off), the DNS resolver domain verification reads, the store and the settings.
// server.ts puts it in the context and runs the worker (domain/edge/edge-worker.ts).
import { readFileSync } from 'node:fs';
import type { Knex, Logger } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import type { ComputeConfig } from './config.ts';
import type { EdgePort } from './domain/edge/edge-port.ts';
import type { EdgeDeps } from './domain/edge/edge-deps.ts';
import { DockerEdge } from './cluster/docker-edge.ts';
import { KubernetesEdge } from './cluster/kubernetes-edge.ts';
import { AcmeIssuer } from './edge/acme-issuer.ts';
import { ResolverDns } from './edge/dns-resolver.ts';
import { KnexHostnameStore } from './store/hostname-store.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

function createEdgePort(config: ComputeConfig, logger: Logger): EdgePort | null {
  if (config.PIER_EDGE === 'off') return null;
  if (config.PIER_CLUSTER === 'kubernetes') {
    return new KubernetesEdge(
      kubeConfigFrom(config.PIER_KUBECONFIG),
      {
        ingressClass: config.PIER_EDGE_INGRESS_CLASS,
        appsTlsSecret: config.PIER_EDGE_APPS_TLS_SECRET,
        clusterIssuer: config.PIER_EDGE_CLUSTER_ISSUER,
        addresses: config.PIER_EDGE_ADDRESSES,
        httpsPort: config.PIER_EDGE_HTTPS_PORT,
        caPem: config.PIER_EDGE_CA_FILE ? readFileSync(config.PIER_EDGE_CA_FILE, 'utf8') : undefined,
      },
      logger,
    );
  }
  return new DockerEdge({
    host: config.PIER_DOCKER_HOST,
    container: config.PIER_EDGE_CONTAINER,
    image: config.PIER_EDGE_IMAGE,
    httpPort: config.PIER_EDGE_HTTP_PORT,
    httpsPort: config.PIER_EDGE_HTTPS_PORT,
    bindAddress: config.PIER_EDGE_BIND_ADDRESS,
    appsDomain: config.PIER_APPS_DOMAIN,
    addresses: config.PIER_EDGE_ADDRESSES,
    routeDnsPort: config.PIER_EDGE_ROUTE_DNS_PORT,
    appsCertificate:
      config.PIER_EDGE_APPS_CERT_FILE && config.PIER_EDGE_APPS_KEY_FILE
        ? { certificatePem: readFileSync(config.PIER_EDGE_APPS_CERT_FILE, 'utf8'), keyPem: readFileSync(config.PIER_EDGE_APPS_KEY_FILE, 'utf8') }
        : undefined,
    acme: new AcmeIssuer({
      directoryUrl: config.PIER_ACME_DIRECTORY_URL,
      email: config.PIER_ACME_EMAIL,
      caPem: config.PIER_ACME_CA_FILE ? readFileSync(config.PIER_ACME_CA_FILE, 'utf8') : undefined,
      timeoutMs: config.PIER_ACME_TIMEOUT_SECONDS * 1000,
    }),
    logger,
  });
}

export function createEdge(config: ComputeConfig, db: Knex, logger: Logger): EdgeDeps {
  return {
    port: createEdgePort(config, logger),
    store: new KnexHostnameStore(db),
    dns: new ResolverDns(config.PIER_DNS_RESOLVERS),
    settings: {
      appsDomain: config.PIER_APPS_DOMAIN,
      maxDomainsPerService: config.PIER_DOMAINS_PER_SERVICE,
      claimTtlMs: Math.round(config.PIER_DOMAIN_CLAIM_TTL_HOURS * HOUR_MS),
      renewBeforeMs: config.PIER_ACME_RENEW_BEFORE_DAYS * DAY_MS,
    },
    // Replaced by the worker once it exists (server.ts).
    syncer: { poke: () => undefined },
  };
}
