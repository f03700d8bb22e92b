// The background half of compute: what no request is waiting for, and what a crash left
// half done. Each pass is idempotent, so a pass that fails (the cluster is away) is simply
// tried again at the next.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from './context.ts';
import type { Service } from './records.ts';
import { refreshStatuses } from './live-status.ts';
import { teardown } from './services.ts';
import { finishPendingRollouts } from './rollouts.ts';
import { refOf } from './context.ts';

/** A pending row younger than this may belong to a request still in flight. */
const PENDING_GRACE_MS = 120_000;

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
  }
}
