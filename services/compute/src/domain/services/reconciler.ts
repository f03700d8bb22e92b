// The background half of compute: what no request is waiting for, and what a crash left
// half done. Each pass is idempotent, so a pass that fails (the cluster is away) is simply
// tried again at the next.
//
// The sweep (at start-up and every SWEEP_EVERY passes) makes the cluster match the records
// where a request could not: a create or rollout whose cluster call failed half way (the
// engine went away between two calls) answered 503 and kept no record, and the undo of
// what the cluster already had could not reach it either. So, in every VPC with services:
//
//   workload of no live service             deleted
//   service running another deployment too  its current deployment applied again (the rollout undone)
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { Service } from '../records.ts';
import type { Workload } from '../cluster-port.ts';
import { refreshStatuses } from './status-refresh.ts';
import { teardown } from './services.ts';
import { finishPendingRollouts } from './rollouts.ts';
import { refOf, specOf } from '../context.ts';

/** A pending row younger than this may belong to a request still in flight. */
const PENDING_GRACE_MS = 120_000;
/** The sweep lists each VPC's workloads, so it runs at start-up and then every Nth pass. */
const SWEEP_EVERY = 10;
/** Statuses a service rests in: a rollout of it is not under way (its old replicas may still be leaving). */
const SETTLED = new Set(['running', 'crashed', 'scaled']);

export class Reconciler {
  private readonly loop: Periodic;
  private passes = 0;
  private readonly tearingDown = new Set<string>();

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.pass(), intervalMs, { log, what: 'compute reconcile pass' });
  }

  /** Finishes what a previous process left pending, then settles rollouts every interval. */
  start(): void {
    this.loop.start(() => this.recover(new Date()));
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Settles once the start-up pass has run (kit's Background): a retried keyed create waits for it. */
  recovered(): Promise<void> {
    return this.loop.firstPass();
  }

  /** One pass: settle rollouts in progress (so their events go out without anyone reading), finish teardowns. */
  async pass(): Promise<void> {
    this.passes++;
    // A service never deployed has nothing in the cluster to settle.
    const rolling = (await this.ctx.store.servicesInStatus(['creating', 'deploying', 'restarting'])).filter((s) => s.current_deployment_id);
    const byVpc = new Map<string, Service[]>();
    for (const s of rolling) (byVpc.get(s.vpc_id) ?? byVpc.set(s.vpc_id, []).get(s.vpc_id)!).push(s);
    for (const [vpcId, services] of byVpc) {
      await refreshStatuses(this.ctx, { workspaceId: services[0]!.workspace_id, vpcId }, services);
    }
    for (const s of await this.ctx.store.servicesInStatus(['deleting'])) this.finishTeardown(s);
    if (this.passes % SWEEP_EVERY === 0) await this.sweep();
    // Pending rows older than a request can take: a failure of the cleanup itself left them.
    if (this.passes % 30 === 0) await this.recover(new Date(Date.now() - PENDING_GRACE_MS));
  }

  private finishTeardown(s: Service): void {
    if (this.tearingDown.has(s.id) || this.ctx.locks.busy(s.id)) return;
    this.tearingDown.add(s.id);
    void teardown(this.ctx, s)
      .catch((err) => this.log.warn({ err: String(err), service: s.id }, 'teardown failed; will retry'))
      .finally(() => this.tearingDown.delete(s.id));
  }

  /**
   * Creates whose outcome never committed are undone (the client got no 201); rollouts
   * the cluster may already run are finished.
   */
  async recover(createdBefore: Date): Promise<void> {
    for (const s of await this.ctx.store.unprovisionedServices(createdBefore)) {
      await this.ctx.locks.run(s.id, async () => {
        await this.ctx.cluster.delete(refOf(s));
        await this.ctx.store.deleteUnprovisioned(s.id);
        this.log.info({ service: s.id }, 'removed a service whose create never finished');
      });
    }
    await finishPendingRollouts(this.ctx, createdBefore, this.log);
    await this.sweep();
  }

  /** Makes each VPC's workloads match the records (see the top of this file). */
  async sweep(): Promise<void> {
    for (const scope of await this.ctx.store.serviceVpcs()) {
      const workloads = await this.ctx.cluster.workloads(scope);
      for (const w of workloads) {
        // A request of this process is working on it: what it leaves is its own to settle.
        if (this.ctx.locks.busy(w.serviceId)) continue;
        await this.ctx.locks
          .run(w.serviceId, () => this.settle(w))
          .catch((err) => this.log.warn({ err: String(err), service: w.serviceId }, 'sweep: could not settle a workload; will retry'));
      }
    }
  }

  private async settle(w: Workload): Promise<void> {
    const s = await this.ctx.store.serviceById(w.serviceId);
    if (!s || s.deleted_at) {
      await this.ctx.cluster.delete(w);
      this.log.info({ service: w.serviceId, vpcId: w.vpcId }, 'removed a workload no service record accounts for');
      return;
    }
    // Unprovisioned rows are recovery's; teardowns and rollouts under way settle themselves.
    if (!s.provisioned || !SETTLED.has(s.status) || !s.current_deployment_id) return;
    if (w.deploymentIds.every((id) => id === s.current_deployment_id)) return;
    if ((await this.ctx.store.pendingDeployments(new Date())).some((d) => d.service_id === s.id)) return;
    const current = await this.ctx.store.deploymentById(s.current_deployment_id);
    // A rollout the cluster refused keeps what ran before it: nothing to undo.
    if (!current?.applied) return;
    await this.ctx.cluster.apply(specOf(s, current));
    this.log.info(
      { service: s.id, deployment: current.id, others: w.deploymentIds.filter((id) => id !== current.id) },
      'undid a rollout the records do not have',
    );
  }
}
