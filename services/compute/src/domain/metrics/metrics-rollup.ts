// Downsampling and retention of service metrics, in one instance (the `metrics-rollup`
// lease): every minute, the minute rows of each hour that ended more than a flush ago are
// summed into hour rows (each minute row once: it is marked rolled in the same transaction),
// minute rows older than MINUTE_RETENTION_MS go (the 24h window reads minutes), and hour
// rows and coverage older than HOUR_RETENTION_MS go (the 7d window reads hours).
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';

const PASS_MS = 60_000;
const HOUR_MS = 3_600_000;
/** Minute rows: the 24 h window, and an hour to spare for the rollup. */
export const MINUTE_RETENTION_MS = 25 * HOUR_MS;
/** Hour rows: the 7 d window, and a day to spare. */
export const HOUR_RETENTION_MS = 8 * 24 * HOUR_MS;

export class MetricsRollup {
  private readonly loop: Periodic;

  constructor(
    private readonly ctx: ComputeContext,
    private readonly log: Logger,
  ) {
    this.loop = new Periodic(() => this.pass(), PASS_MS, { log, what: 'metrics rollup pass' });
  }

  start(): void {
    this.loop.start(() => this.pass());
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass as if it were `now`; the hour rows made and the rows deleted. */
  async pass(now = this.ctx.now()): Promise<{ rolled: number; pruned: number }> {
    const { store, settings } = this.ctx.metrics;
    // Rows of an hour may still come until a flush after its end.
    const settled = Math.floor((now.getTime() - settings.flushMs - 5_000) / HOUR_MS) * HOUR_MS;
    const rolled = await store.rollUp(new Date(settled));
    const pruned = await store.prune(new Date(now.getTime() - MINUTE_RETENTION_MS), new Date(now.getTime() - HOUR_RETENTION_MS));
    if (rolled || pruned) this.log.debug({ rolled, pruned }, 'metrics rolled up and pruned');
    return { rolled, pruned };
  }
}
