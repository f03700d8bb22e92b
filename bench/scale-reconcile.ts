// Times compute's reconciler at size. Kit's Reconciler keeps no timing of its own (no
// metric, no log line unless it settled something), so the benchmark runs compute's
// reconciler itself: a second instance of it, as the Helm chart's second replica would
// run it, on compute's database and the same cluster, with compute's own parts (store,
// kubernetes adapter, leases). Its first pass is the start-up one, which sweeps; the
// passes after it sweep too, but (with the pod watch, as compute runs by default) only the
// VPCs whose pods changed since the sweep before. Each pass is counted in database
// statements and cluster API requests, to tell per-VPC from per-service cost.
import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';
import { createDb, createLogger, holderId, Leases, ResourceLocks } from '@pier/kit';
import { KnexComputeStore } from '../services/compute/src/store/store.ts';
import { KubernetesCluster } from '../services/compute/src/cluster/kubernetes.ts';
import { computeReconciler } from '../services/compute/src/domain/services/reconciler.ts';
import type { ComputeContext } from '../services/compute/src/domain/context.ts';

export interface PassCost {
  ms: number;
  statements: number;
  clusterCalls: number;
}

export interface ReconcileTimings {
  /** From start to the pod watch's copy being complete (a paged list of every pod). */
  syncMs: number;
  /** The start-up pass: pending steps, observe and the sweep of every VPC. */
  withSweep: PassCost;
  /** Passes after it, each sweeping the VPCs whose pods changed, in order. */
  passes: PassCost[];
}

/** `profile`: a file to write a CPU profile of the pass that sweeps every VPC to (Chrome DevTools' format). */
export async function timeComputeReconciler(databaseUrl: string, kubeconfig: string, passes: number, profile?: string): Promise<ReconcileTimings> {
  const db = createDb(databaseUrl, 'compute', 4);
  let statements = 0;
  db.on('query', () => statements++);
  const log = createLogger('compute-bench-reconciler', 'warn');
  const cluster = KubernetesCluster.fromKubeconfig(kubeconfig, log, undefined, undefined, true);
  const t = performance.now();
  cluster.start();
  if (!(await cluster.pods!.synced(300_000))) throw new Error('the pod watch did not sync within 5 minutes');
  const syncMs = performance.now() - t;
  // What the reconciler's steps, observe and sweep use; the rest of compute's context
  // (builds, edge, logs, ...) is only reached by a teardown, and no service is being deleted.
  const ctx = {
    store: new KnexComputeStore(db),
    cluster,
    locks: new ResourceLocks(new Leases(db, holderId('compute')), log),
    log,
    now: () => new Date(),
    eventsWritten: () => undefined,
  } as unknown as ComputeContext;
  const hour = 3_600_000;
  const reconciler = computeReconciler(ctx, { intervalMs: hour, graceMs: 120_000, sweepEveryMs: 0 });
  const measure = async (): Promise<PassCost> => {
    const [s0, c0, t0] = [statements, cluster.calls, performance.now()];
    const report = await reconciler.runOnce();
    if (report.failed) throw new Error(`reconcile pass: ${report.failed} items failed`);
    return { ms: performance.now() - t0, statements: statements - s0, clusterCalls: cluster.calls - c0 };
  };
  try {
    const withSweep = profile ? await profiled(profile, measure) : await measure();
    const rest: PassCost[] = [];
    for (let i = 0; i < passes; i++) rest.push(await measure());
    return { syncMs, withSweep, passes: rest };
  } finally {
    await cluster.stop();
    await db.destroy();
  }
}

/** Runs `fn` under V8's CPU profiler, and writes the profile to `file`. */
async function profiled<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
  }
}
