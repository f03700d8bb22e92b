/**
 * compute on its own, for its service-level tests: the shared harness (fresh database,
 * the suite's NATS, identity tokens for any role), the real Docker engine (or whatever
 * PIER_CLUSTER says), and the real secrets service when a test needs references.
 */
import { generateIdentityKeys } from '@pier/kit';
import {
  infra,
  removeVpcObjects,
  startServiceUnderTest,
  type IdentityKeys,
  type RealKubernetes,
  type ServiceUnderTest,
  type TestDatabase,
  type TestEdge,
} from '@pier/testing';
import * as secrets from '@pier/secrets';
import { start, readConfig } from '../src/index.ts';

export { until, docker, vpcContainers, removeVpcObjects as cleanDocker, type TestDatabase } from '@pier/testing';

export const TINY_HTTP = 'pier/tiny-http:1';
export const EXITS = 'pier/exits:1';

export interface Compute extends ServiceUnderTest<Awaited<ReturnType<typeof start>>> {
  /** Base path of the services API in this workspace/VPC. */
  base: string;
}

/**
 * Starts compute on a fresh database (or `shared.db`, dropped by whoever made it) trusting
 * identity tokens of `shared.keys` (or a new key pair).
 */
export async function startCompute(env: Record<string, string> = {}, shared: { db?: TestDatabase; keys?: IdentityKeys } = {}): Promise<Compute> {
  const h = await startServiceUnderTest({
    schema: 'compute',
    start: (e, logs) => start(readConfig(e), { logDestination: logs }),
    // The edge (one proxy container for the machine) only where a test asks for it (testEdge).
    env: { PIER_COMPUTE_HTTP_PORT: '0', PIER_COMPUTE_RECONCILE_INTERVAL_MS: '500', PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: '5', PIER_EDGE: 'off', ...env },
    ...shared,
  });
  return Object.assign(h, { base: `/api/v1/workspaces/${h.workspaceId}/vpcs/${h.vpcId}/services` });
}

/** compute with the edge and its elastic controller quick enough for a test: a 3 s scale-down delay, a pass every 200 ms. */
export function startElasticCompute(edge: TestEdge): Promise<Compute> {
  return startCompute({ ...edge.env, PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS: '3', PIER_COMPUTE_ELASTIC_TICK_MS: '200' });
}

/** Stops compute (when it started), removes the edge container and what compute ran in its VPC. */
export async function stopWithEdge(c: Compute | undefined, edge: TestEdge): Promise<void> {
  await c?.stop();
  await edge.remove();
  if (c) await removeVpcObjects(c.vpcId);
}

/**
 * The real secrets service beside compute, trusting compute's own key: what compute's
 * secret-reference tests need. `clusterEnv` chooses the secrets store (docker or kubernetes).
 */
export async function startSecretsFor(
  db: TestDatabase,
  keys: IdentityKeys,
  clusterEnv: Record<string, string>,
): Promise<{ service: Awaited<ReturnType<typeof secrets.start>>; computeEnv: Record<string, string> }> {
  const computeKeys = await generateIdentityKeys();
  const service = await secrets.start(
    secrets.readConfig({
      PIER_DATABASE_URL: db.urls.secrets,
      PIER_NATS_URL: infra().natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_SECRETS_HTTP_PORT: '0',
      PIER_SECRETS_GRPC_PORT: '0',
      PIER_COMPUTE_SERVICE_PUBLIC_KEY: computeKeys.publicJwk,
      PIER_LOG_LEVEL: 'warn',
      ...clusterEnv,
    }),
  );
  // What compute needs to call it: where, and the key it signs its calls with.
  const computeEnv = { PIER_SECRETS_GRPC_URL: `127.0.0.1:${service.grpcPort}`, PIER_COMPUTE_SERVICE_PRIVATE_KEY: computeKeys.privateJwk };
  return { service, computeEnv };
}

/**
 * compute's settings on the real test cluster, its edge the cluster's ingress controller (as
 * `cluster.sh env` prints them): what the kubernetes-real files share.
 */
export function onRealCluster(k: RealKubernetes): Record<string, string> {
  const ingress = k.ingressAddress();
  return {
    PIER_CLUSTER: 'kubernetes',
    PIER_KUBECONFIG: k.kubeconfig,
    PIER_EDGE: 'on',
    PIER_EDGE_SYNC_INTERVAL_MS: '500',
    PIER_APPS_DOMAIN: k.appsDomain,
    PIER_EDGE_ADDRESSES: ingress.host,
    PIER_EDGE_HTTPS_PORT: String(ingress.port),
    PIER_EDGE_CA_FILE: k.appsCaFile,
    PIER_COMPUTE_INGRESS_METRICS_URLS: k.ingressMetricsUrl(),
  };
}
