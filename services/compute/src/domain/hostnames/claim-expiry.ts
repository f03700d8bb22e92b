// The expiry pass of unverified domain claims: at start and every minute, the claims past
// their lifetime (PIER_DOMAIN_CLAIM_TTL_HOURS) are removed, each with `service.domain.expired`
// in its workspace. Readers treat a lapsed claim as gone already, so the pass only tidies the
// table and tells the claimant; a minute late is no harm.
import { Periodic, type Logger } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import { expireClaims } from './hostname-claims.ts';

const PASS_INTERVAL_MS = 60_000;
/** Claims removed per transaction: each delete stays short, whatever a long pause left behind. */
const BATCH = 500;

export class ClaimExpiry {
  private readonly loop: Periodic;

  constructor(
    private readonly ctx: Pick<ComputeContext, 'edge' | 'eventsWritten' | 'now'>,
    private readonly log: Logger,
  ) {
    this.loop = new Periodic(() => this.pass(), PASS_INTERVAL_MS, { log, what: 'domain claim expiry pass' });
  }

  start(): void {
    this.loop.start(() => this.pass());
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass as if it were `now`; how many claims went. */
  async pass(now = this.ctx.now()): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await expireClaims(this.ctx, now, BATCH);
      total += n;
      if (n < BATCH) break;
    }
    if (total) this.log.info({ claims: total }, 'removed domain claims never verified in time');
    return total;
  }
}
