// Gathers service metrics in one instance of compute (the `metrics` lease, server.ts): reads
// every replica's CPU and memory from the cluster each `sampleMs`, follows the edge's
// requests as it answers them, sums both per service and minute in memory (metric-minutes.ts)
// and writes the rows each `flushMs`, with the edge cursor (the last request counted) in the
// same transaction. One collector at a time; the next one (a restart, another instance taking
// the lease) goes on from the stored cursor, so a request is counted once; rows only ever add,
// so a handover mid-minute leaves two rows of that minute that sum to what was counted. A host
// the routing table does not know (an unknown host's 404) is nobody's request.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { EdgeRoute } from '../edge/edge-port.ts';
import { routingTable } from '../edge/edge-table.ts';
import { MetricMinutes, MINUTE_MS, minuteOf } from './metric-minutes.ts';
import type { EdgeRequest } from './metrics-port.ts';

/** The routing table is read again this often, and at most this often on a host it does not know. */
const HOSTS_REFRESH_MS = 30_000;
const HOSTS_MISS_MS = 500;
const FOLLOW_RETRY_MS = 2_000;

export class MetricsCollector {
  private readonly minutes = new MetricMinutes();
  private readonly sampler: Periodic;
  private readonly flusher: Periodic;
  private follow?: AbortController;
  private following?: Promise<void>;
  /** Minutes during which the edge's stream was open, not yet written. */
  private readonly coveredMinutes = new Set<number>();
  /** Since when the edge's stream has been open and not yet recorded as coverage (ms); null while it is not open. */
  private openSince: number | null = null;
  private hosts = new Map<string, string>();
  /** The last request counted (ms), in memory; the stored one moves with each flush. */
  private cursor: number | null = null;
  private counting: Promise<void> = Promise.resolve();
  private lastFailure = '';
  private hostsReadAt = 0;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
  ) {
    const { sampleMs, flushMs } = ctx.metrics.settings;
    this.sampler = new Periodic(() => this.sample(), sampleMs, { log, what: 'metrics: reading CPU and memory' });
    this.flusher = new Periodic(() => this.flush(), flushMs, { log, what: 'metrics: writing' });
  }

  start(): void {
    this.sampler.start(() => this.sample());
    this.flusher.start();
    if (this.ctx.metrics.traffic) {
      this.follow = new AbortController();
      this.following = this.followEdge(this.follow.signal);
    }
  }

  async stop(): Promise<void> {
    this.follow?.abort();
    await this.following;
    await this.counting;
    await Promise.all([this.sampler.stop(), this.flusher.stop()]);
    await this.flush().catch((err: unknown) => this.log.warn({ err }, 'metrics: the last write failed; those counts are lost'));
  }

  /** One read of every replica's CPU and memory. */
  async sample(): Promise<void> {
    const usage = await this.ctx.metrics.usage.usage();
    this.minutes.usage(usage, this.ctx.now().getTime());
  }

  /** Writes what was gathered; on failure it is kept for the next flush. */
  async flush(): Promise<void> {
    this.coverOpenStream();
    const covered = [...this.coveredMinutes].map((m) => new Date(m));
    const rows = this.minutes.take();
    const cursor = this.cursor;
    try {
      if (rows.length || cursor !== null) await this.ctx.metrics.store.add(rows, cursor ?? undefined);
      if (covered.length) await this.ctx.metrics.store.cover(covered);
      this.coveredMinutes.clear();
    } catch (err) {
      this.minutes.putBack(rows);
      throw err;
    }
  }

  private async followEdge(signal: AbortSignal): Promise<void> {
    const traffic = this.ctx.metrics.traffic!;
    while (!signal.aborted) {
      try {
        this.cursor ??= await this.ctx.metrics.store.edgeCursor();
        await this.serviceHosts(true);
        await traffic.follow(this.cursor, { opened: () => (this.openSince = this.ctx.now().getTime()), requests: (batch) => this.count(batch) }, signal);
      } catch (err) {
        // Once per kind of failure, not every retry (the edge container is made at the edge's first sync).
        const why = (err as Error).message;
        if (!signal.aborted && why !== this.lastFailure) this.log.warn({ err }, "metrics: cannot follow the edge's requests; trying again");
        this.lastFailure = why;
      } finally {
        this.coverOpenStream();
        this.openSince = null;
      }
      if (!signal.aborted) await new Promise((r) => setTimeout(r, FOLLOW_RETRY_MS).unref());
    }
  }

  /** Every minute since the stream was last recorded open, up to now, is a minute whose requests were counted. */
  private coverOpenStream(): void {
    if (this.openSince === null) return;
    const now = this.ctx.now().getTime();
    for (let m = minuteOf(this.openSince); m <= now; m += MINUTE_MS) this.coveredMinutes.add(m);
    this.openSince = now;
  }

  /** Batches are counted one after the other, in order: the cursor never passes a request not counted yet. */
  private count(batch: EdgeRequest[]): void {
    this.counting = this.counting.then(() => this.countBatch(batch));
  }

  private async countBatch(batch: EdgeRequest[]): Promise<void> {
    // The table is read again every HOSTS_REFRESH_MS, and on a host it does not know (a service
    // just created) at most every HOSTS_MISS_MS.
    const hosts = await this.serviceHosts(
      false,
      batch.some((r) => !this.hosts.has(r.host)),
    );
    for (const r of batch) {
      const serviceId = hosts.get(r.host);
      if (serviceId) this.minutes.request(serviceId, r);
      if (this.cursor === null || r.at > this.cursor) this.cursor = r.at;
    }
  }

  /** Host (or the edge's name of a route) -> service id, from the routing table (our records, as the edge routes them). */
  private async serviceHosts(force: boolean, missed = false): Promise<Map<string, string>> {
    const age = Date.now() - this.hostsReadAt;
    if (!force && age < (missed ? HOSTS_MISS_MS : HOSTS_REFRESH_MS)) return this.hosts;
    this.hostsReadAt = Date.now();
    try {
      const hosts = new Map<string, string>();
      const keysOf = (r: EdgeRoute) => this.ctx.metrics.traffic?.routeKeys?.(r) ?? [r.serviceHost, ...r.customHosts];
      for (const r of await routingTable(this.ctx.edge)) for (const h of keysOf(r)) hosts.set(h.toLowerCase(), r.serviceId);
      this.hosts = hosts;
    } catch (err) {
      this.log.warn({ err }, 'metrics: cannot read the routing table; counting with the last one');
    }
    return this.hosts;
  }
}
