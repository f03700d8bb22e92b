// Times compute's edge sync at size (kubernetes): the routing table read from compute's
// database and handed to a KubernetesEdge of its own, as a compute that has just started
// (a restart, a new leader) does, then again with nothing changed, as every create's and
// delete's sync does. The Ingresses are those the running compute applied; the bench's
// edge uses the same settings, so it has none to apply again.
import { createDb, createLogger, type Knex } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { KubernetesEdge } from '../services/compute/src/cluster/kubernetes-edge.ts';
import { KnexHostnameStore } from '../services/compute/src/store/hostname-store.ts';
import { routingTable } from '../services/compute/src/domain/edge/edge-table.ts';
import type { EdgeDeps } from '../services/compute/src/domain/edge/edge-deps.ts';

export interface EdgeSyncTimings {
  routes: number;
  /** A new edge's first sync: the table read, the Ingresses listed, every route built once. */
  firstMs: number;
  /** Ingresses it applied (0: each was found as applied). */
  firstApplies: number;
  /** The syncs after it, nothing changed: the table read and compared. */
  againMs: number[];
}

/** `applies`: how many Ingress applies the API server has had so far (the fake's request log). */
export async function timeEdgeSync(
  databaseUrl: string,
  kubeconfig: string,
  settings: { ingressClass: string; appsDomain: string },
  applies: () => number,
): Promise<EdgeSyncTimings> {
  const db: Knex = createDb(databaseUrl, 'compute', 2);
  const log = createLogger('compute-bench-edge', 'warn');
  const edge = new KubernetesEdge(kubeConfigFrom(kubeconfig), { ingressClass: settings.ingressClass, clusterIssuer: 'pier-acme', addresses: [] }, log);
  const deps = { store: new KnexHostnameStore(db), settings: { appsDomain: settings.appsDomain } } as unknown as EdgeDeps;
  const sync = async () => {
    const t = performance.now();
    const table = await routingTable(deps);
    await edge.sync(table);
    return { ms: performance.now() - t, routes: table.length };
  };
  try {
    const before = applies();
    const first = await sync();
    const firstApplies = applies() - before;
    const againMs: number[] = [];
    for (let i = 0; i < 5; i++) againMs.push((await sync()).ms);
    return { routes: first.routes, firstMs: first.ms, firstApplies, againMs };
  } finally {
    await db.destroy();
  }
}
