// History keeps lines for the configured number of days. At start and every hour, this
// prepares the store for today and the next two days (so the writer never waits on it at
// midnight) and drops every day that ended before the retention window. Reads stop at the
// window too, so no line older than the retention is ever answered, even before its day
// is dropped.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import { DAY_MS } from './log-writer.ts';

const PASS_INTERVAL_MS = 3_600_000;
/** Days prepared ahead of today. */
const DAYS_AHEAD = 2;

export class LogRetention {
  private readonly loop: Periodic;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
  ) {
    this.loop = new Periodic(() => this.pass(), PASS_INTERVAL_MS, { log, what: 'log retention pass' });
  }

  start(): void {
    this.loop.start(() => this.pass());
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass; the days dropped. */
  async pass(): Promise<string[]> {
    const now = this.ctx.now().getTime();
    const { store, retentionDays } = this.ctx.logs;
    await store.ensureDays(Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => new Date(now + i * DAY_MS)));
    const dropped = await store.dropBefore(new Date(now - retentionDays * DAY_MS));
    if (dropped.length) this.log.info({ days: dropped, retentionDays }, 'dropped log history past its retention');
    return dropped;
  }
}
