// The edge's background half: the routing table re-sent now and then (a restarted or lost
// edge converges, a new or deleted service appears or goes without a request for it), and
// certificates obtained or renewed without anyone asking: those waiting for one (cert-manager
// still working, or a crash in the middle of an issuance) and those expiring within the margin.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { EdgeSyncer } from './edge-deps.ts';
import { syncEdge } from './edge-table.ts';
import { certify } from '../hostnames/hostnames.ts';

/** Certificates looked at per pass: an issuance takes seconds, and a pass should stay short. */
const CERTIFICATES_PER_PASS = 5;

export class EdgeWorker implements EdgeSyncer {
  private readonly loop: Periodic;
  private stopped = true;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
    intervalMs: number,
  ) {
    this.loop = new Periodic(() => this.pass(), intervalMs, { log, what: 'edge sync pass' });
  }

  start(): void {
    this.stopped = false;
    this.loop.start(() => this.pass());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
  }

  poke(): void {
    // One poke waiting for its turn covers every poke until then: it reads the table when it runs.
    if (this.stopped || !this.ctx.edge.port || this.pokeWaiting) return;
    this.pokeWaiting = true;
    void syncEdge(this.ctx, {}, undefined, () => (this.pokeWaiting = false)).catch((err: unknown) => {
      this.pokeWaiting = false;
      this.log.warn({ err: String(err) }, 'edge sync failed; the next pass retries');
    });
  }

  private pokeWaiting = false;

  private async sync(): Promise<void> {
    await syncEdge(this.ctx);
  }

  async pass(now = this.ctx.now()): Promise<void> {
    if (!this.ctx.edge.port) return;
    await this.sync();
    const due = await this.ctx.edge.store.hostnamesNeedingTls(new Date(now.getTime() + this.ctx.edge.settings.renewBeforeMs));
    for (const d of due.slice(0, CERTIFICATES_PER_PASS)) {
      const key = `domain:${d.id}`;
      // A verify in progress is issuing it right now.
      if (this.stopped || this.ctx.locks.busy(key)) continue;
      await this.ctx.locks.run(key, async () => {
        const current = await this.ctx.edge.store.findHostname(d.service_id, d.id, now);
        const service = current && (await this.ctx.store.serviceById(current.service_id));
        if (!current?.routed || !service || service.deleted_at) return;
        const after = await certify(this.ctx, service, current);
        this.log.info({ domain: d.hostname, tls: after.tls_status, expires: after.tls_expires_at, error: after.tls_error }, 'certificate looked after');
      });
    }
  }
}
