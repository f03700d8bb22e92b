// The background half of compute: what no request is waiting for, and what a crash left
// half done. Kit's Reconciler runs the loop; this file gives compute's parts of it:
//
//   every pass (observe)                    statuses of rollouts in progress refreshed (their events go out
//                                           without anyone reading); teardowns of `deleting` services finished;
//                                           on kubernetes, statuses of resting services whose pods changed
//   every sweep                             statuses of resting services (running, crashed, scaled) refreshed
//   unprovisioned service (create)          undone: workload deleted, row deleted (the client got no 201)
//   pending deployment (rollout)            finished: applied again (apply is idempotent), then committed
//
// The sweep (at start-up and every sweep interval) makes the cluster match the records
// where a request could not: a create or rollout whose cluster call failed half way (the
// engine went away between two calls) answered 503 and kept no record, and the undo of
// what the cluster already had could not reach it either. So, in every VPC with services:
//
//   workload of no live service             deleted
//   service running another deployment too  its current deployment applied again (the rollout undone)
//   resting service with nothing running    its current deployment applied again (its workload was
//                                           removed outside Pier: it reads `crashed` until it is back)
//
// Where the cluster says what changed (kubernetes' pod watch: ClusterPort.changes), a sweep
// looks only at the VPCs whose pods changed since the last one, so its cost follows the
// changes, not the number of services; the first sweep and every FULL_SWEEP_EVERY-th look at
// every VPC, for what a watch cannot show (a settle skipped because its service was busy).
import { Reconciler, pendingStep, type ReconcileTimes, type SettleEach } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { DeploymentHead, Service } from '../records.ts';
import type { ServiceStatus } from './status.ts';
import type { Workload } from '../cluster-port.ts';
import { currentDeploymentIds, refreshStatuses } from './status-refresh.ts';
import { teardown } from './services.ts';
import { finishPendingRollout } from './rollouts.ts';
import { refOf, specOf, targetOf } from '../context.ts';

/** Statuses a service rests in: a rollout of it is not under way (its old replicas may still be leaving). */
const SETTLED = new Set<ServiceStatus>(['running', 'crashed', 'scaled']);

/** Every this many sweeps (and the first), all VPCs are swept even where the cluster reports changes. */
const FULL_SWEEP_EVERY = 15;

/** Where the passes and sweeps stand in the cluster's changes (ClusterPort.changes). */
interface ChangeCursors {
  observed: number;
  swept: number;
  sweeps: number;
  /** VPCs whose services this pass's observe refreshed: the sweep right after it need not again. */
  refreshed: Set<string>;
}

export function computeReconciler(ctx: ComputeContext, times: ReconcileTimes): Reconciler {
  // Teardowns run beside the passes (one can take as long as the cluster's stop timeout);
  // this keeps a slow one from being started again by the next pass.
  const tearingDown = new Set<string>();
  const cursors: ChangeCursors = { observed: 0, swept: 0, sweeps: 0, refreshed: new Set() };
  return new Reconciler(
    {
      observe: () => observe(ctx, tearingDown, cursors),
      steps: [
        pendingStep({
          what: 'undo a create',
          pending: (before) => ctx.store.unprovisionedServices(before),
          key: (s) => s.id,
          settle: (s) => undoCreate(ctx, s),
        }),
        pendingStep({
          what: 'finish a rollout',
          pending: (before) => ctx.store.pendingDeployments(before),
          key: (d) => d.service_id,
          settle: (d) => finishPendingRollout(ctx, d),
        }),
      ],
      sweep: (each) => sweep(ctx, each, cursors),
    },
    { service: 'compute', resources: 'services', log: ctx.log, now: () => ctx.now(), locks: ctx.locks, ...times },
  );
}

/** Settles rollouts in progress, refreshes resting services whose pods changed, and finishes teardowns. */
async function observe(ctx: ComputeContext, tearingDown: Set<string>, cursors: ChangeCursors): Promise<void> {
  // A service never deployed has nothing in the cluster to settle.
  const rolling = (await ctx.store.servicesInStatus(['creating', 'deploying', 'restarting'])).filter((s) => s.current_deployment_id);
  // A pod that crashed or came back with nobody reading: its status and event go out now,
  // not at the next sweep. The cursor is taken first, so a change during the pass counts again.
  const cursor = ctx.cluster.changes?.cursor() ?? 0;
  const changed = ctx.cluster.changes?.vpcsChangedSince(cursors.observed);
  if (changed) {
    cursors.observed = cursor;
    if (changed.size) rolling.push(...(await ctx.store.servicesInStatus([...SETTLED], [...changed])).filter((s) => s.current_deployment_id));
  }
  cursors.refreshed.clear();
  // Their deployments in one read, not one a VPC (after a restart every VPC counts as changed).
  const deployments = await ctx.store.deploymentHeadsByIds(currentDeploymentIds(rolling));
  for (const [vpcId, services] of byVpc(rolling)) {
    await refreshStatuses(ctx, { workspaceId: services[0]!.workspace_id, vpcId }, services, deployments);
    if (changed?.has(vpcId)) cursors.refreshed.add(vpcId);
  }
  for (const s of await ctx.store.servicesInStatus(['deleting'])) {
    // teardown takes the lock itself; a busy one is a request's own delete.
    if (tearingDown.has(s.id) || ctx.locks.busy(s.id)) continue;
    tearingDown.add(s.id);
    void teardown(ctx, s)
      .catch((err) => ctx.log.warn({ err: String(err), service: s.id }, 'teardown failed; will retry'))
      .finally(() => tearingDown.delete(s.id));
  }
}

/** A create whose outcome never committed: the client got no 201, so nothing of it stays. */
async function undoCreate(ctx: ComputeContext, s: Service): Promise<boolean> {
  // Read again under the lock: the create may have committed while this pass waited for it.
  // Undone from the listed row, a sibling instance's start-up pass deleted the workloads of
  // services created a moment before (seen at 7,000 services, 16 creates in flight).
  const current = await ctx.store.serviceById(s.id);
  if (!current || current.provisioned) return false;
  await ctx.cluster.delete(refOf(s));
  await ctx.store.deleteUnprovisioned(s.id);
  ctx.log.info({ service: s.id }, 'removed a service whose create never finished');
  return true;
}

function byVpc(services: Service[]): Map<string, Service[]> {
  const groups = new Map<string, Service[]>();
  for (const s of services) (groups.get(s.vpc_id) ?? groups.set(s.vpc_id, []).get(s.vpc_id)!).push(s);
  return groups;
}

/** Makes each VPC's workloads match the records, and its resting services' statuses the cluster's (see the top of this file). */
async function sweep(ctx: ComputeContext, each: SettleEach, cursors: ChangeCursors): Promise<number> {
  const cursor = ctx.cluster.changes?.cursor() ?? 0;
  const changed = cursors.sweeps++ % FULL_SWEEP_EVERY === 0 ? undefined : ctx.cluster.changes?.vpcsChangedSince(cursors.swept);
  cursors.swept = cursor;
  const scopes = (await ctx.store.serviceVpcs()).filter((scope) => !changed || changed.has(scope.vpcId));
  if (scopes.length === 0) return 0;
  const restingList = (await ctx.store.servicesInStatus([...SETTLED], changed && scopes.map((s) => s.vpcId))).filter((s) => s.current_deployment_id);
  // Those of VPCs this pass's observe refreshed already are left out (after a start every VPC counts as changed).
  const toRefresh = byVpc(restingList.filter((s) => !cursors.refreshed.has(s.vpc_id)));
  // The database is read a fixed number of times whatever the number of VPCs: a full sweep
  // of 500 VPCs read their deployments and records VPC by VPC, 1,000 statements.
  const deployments = await ctx.store.deploymentHeadsByIds(currentDeploymentIds(restingList));
  const workloads: Workload[] = [];
  for (const scope of scopes) {
    // A replica that crashed, or came back, with nobody reading the service: its status
    // and event go out now rather than at the next read (one observation per VPC).
    const services = toRefresh.get(scope.vpcId);
    if (services) await refreshStatuses(ctx, scope, services, deployments);
    workloads.push(...(await ctx.cluster.workloads(scope)));
  }
  // The records of the workloads, from what was read above where it has them (at rest, that
  // is nearly every one) and one read of the others; only a workload that looks out of step
  // with its record is settled, under its lock and with its record read again (a per-workload
  // lock and read made the sweep cost ~2 ms a service).
  const records = new Map(restingList.map((s) => [s.id, s]));
  for (const s of await ctx.store.servicesByIds(workloads.filter((w) => !records.has(w.serviceId)).map((w) => w.serviceId))) records.set(s.id, s);
  const settled = await each(
    'settle a workload',
    workloads.filter((w) => outOfStep(w, records.get(w.serviceId))),
    (w) => w.serviceId,
    (w) => settleWorkload(ctx, w),
  );
  const present = new Set(workloads.map((w) => w.serviceId));
  const missing = restingList.filter((s) => !present.has(s.id) && wantsReplicas(s, deployments.get(s.current_deployment_id!)));
  return (
    settled +
    (await each(
      'apply a missing workload',
      missing,
      (s) => s.id,
      (s) => restoreWorkload(ctx, s),
    ))
  );
}

/**
 * Whether the cluster should run something of a service at all times: an applied deployment
 * of a non-cron service with replicas wanted. A CronJob has no pod between its runs, and a
 * service scaled to zero (or asleep) none at all.
 */
function wantsReplicas(s: Service, d: DeploymentHead | undefined): boolean {
  if (!d?.applied) return false;
  const target = targetOf(s, d);
  return target.serviceType !== 'cron' && target.replicas > 0;
}

/** Whether a workload differs from its record (none, deleted, or running another deployment) in a way the sweep settles. */
function outOfStep(w: Workload, s: Service | undefined): boolean {
  if (!s || s.deleted_at) return true;
  // Unprovisioned rows are recovery's; teardowns and rollouts under way settle themselves.
  if (!s.provisioned || !SETTLED.has(s.status) || !s.current_deployment_id) return false;
  return !w.deploymentIds.every((id) => id === s.current_deployment_id);
}

/**
 * A resting service of which the cluster runs nothing (its Deployment deleted by hand, a
 * namespace emptied): its current deployment applied again, as a rollout commits it. False
 * when, read again under its lock, it no longer needs it.
 */
async function restoreWorkload(ctx: ComputeContext, listed: Service): Promise<boolean> {
  const s = await ctx.store.serviceById(listed.id);
  if (!s || s.deleted_at || !s.provisioned || !SETTLED.has(s.status) || s.current_deployment_id !== listed.current_deployment_id) return false;
  const current = await ctx.store.deploymentById(s.current_deployment_id!);
  if (!current || !wantsReplicas(s, current)) return false;
  // A replica that appeared meanwhile (a wake, the ReplicaSet catching up) needs nothing.
  if ((await ctx.cluster.workloads(refOf(s))).some((w) => w.serviceId === s.id)) return false;
  await ctx.cluster.apply(specOf(s, current));
  ctx.log.info({ service: s.id, deployment: current.id }, 'applied again the workload of a service the cluster no longer ran');
  return true;
}

/** False when the workload already matches its records. */
async function settleWorkload(ctx: ComputeContext, w: Workload): Promise<boolean> {
  const s = await ctx.store.serviceById(w.serviceId);
  if (!s || s.deleted_at) {
    await ctx.cluster.delete(w);
    ctx.log.info({ service: w.serviceId, vpcId: w.vpcId }, 'removed a workload no service record accounts for');
    return true;
  }
  if (!outOfStep(w, s) || !s.current_deployment_id) return false;
  if ((await ctx.store.pendingDeployments(ctx.now())).some((d) => d.service_id === s.id)) return false;
  const current = await ctx.store.deploymentById(s.current_deployment_id);
  // A rollout the cluster refused keeps what ran before it: nothing to undo.
  if (!current?.applied) return false;
  await ctx.cluster.apply(specOf(s, current));
  ctx.log.info({ service: s.id, deployment: current.id, others: w.deploymentIds.filter((id) => id !== current.id) }, 'undid a rollout the records do not have');
  return true;
}
