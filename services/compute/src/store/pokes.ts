// Pokes between the instances of compute, over PostgreSQL's LISTEN/NOTIFY: a request that
// queues a build, cancels a running one or changes what the edge routes tells the instance
// leading that loop (leaderOnly in server.ts), perhaps another one, to look now rather than
// at its next pass.
//
// PostgreSQL rather than NATS: a poke says "look at these rows", and the rows are in this
// database, which every instance of one installation shares and no other installation does
// (a NATS subject is shared by every installation on the broker, as the tests run them);
// and it needs no NATS permission. A poke can be lost (the listening connection down, a
// restart): that costs latency only, since every loop still makes its periodic pass.
import type { Knex, Logger } from '@pier/kit';

export const POKE_CHANNEL = 'pier_compute_pokes';

export type Poke = { kind: 'builds' } | { kind: 'build.cancel'; buildId: string } | { kind: 'edge' };

/** The raw pg client knex hands out (acquireRawConnection), as far as listening needs it. */
interface Listener {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): void;
  on(event: 'error' | 'end', fn: (err?: unknown) => void): void;
}

export class PgPokes {
  private listener?: Listener;
  private stopped = true;
  private retry?: NodeJS.Timeout;
  /** Said once while the database stays out of reach, not every retry. */
  private failing = false;

  constructor(
    private readonly db: Knex,
    /** This instance (its lease holder id): a poke it sent itself is not acted on twice. */
    private readonly self: string,
    private readonly log: Logger,
    private readonly received: (poke: Poke) => void,
    private readonly retryMs = 1000,
  ) {}

  start(): void {
    this.stopped = false;
    void this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const listener = this.listener;
    this.listener = undefined;
    if (listener) await this.db.client.destroyRawConnection(listener).catch(() => undefined);
  }

  /** Tells every other instance; a failure is logged (the leader's next pass sees the change). */
  send(poke: Poke): void {
    this.db
      .raw('select pg_notify(?, ?)', [POKE_CHANNEL, JSON.stringify({ from: this.self, ...poke })])
      .catch((err: unknown) =>
        this.log.warn({ err: String(err), poke: poke.kind }, 'a poke to the other instances could not be sent; their next pass sees the change'),
      );
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    let listener: Listener | undefined;
    try {
      // A connection of its own, outside the pool: LISTEN lasts as long as the session.
      listener = (await this.db.client.acquireRawConnection()) as Listener;
      const lost = (err?: unknown) => {
        if (this.listener !== listener) return;
        this.listener = undefined;
        void this.db.client.destroyRawConnection(listener).catch(() => undefined);
        if (this.stopped) return;
        this.failed(err ?? 'connection ended', 'the connection listening for pokes from the other instances was lost; listening again');
        this.again();
      };
      listener.on('error', lost);
      listener.on('end', lost);
      listener.on('notification', (msg) => this.deliver(msg.payload));
      this.listener = listener;
      await listener.query(`LISTEN ${POKE_CHANNEL}`);
      if (this.stopped) return await this.stop();
      if (this.failing) this.log.info('listening for pokes from the other instances again');
      this.failing = false;
    } catch (err) {
      if (listener && this.listener === listener) this.listener = undefined;
      if (listener) await this.db.client.destroyRawConnection(listener).catch(() => undefined);
      if (this.stopped) return;
      this.failed(err, 'cannot listen for pokes from the other instances; trying again');
      this.again();
    }
  }

  private failed(err: unknown, message: string): void {
    if (this.failing) this.log.debug({ err: String(err) }, message);
    else this.log.warn({ err: String(err) }, message);
    this.failing = true;
  }

  private again(): void {
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.listen(), this.retryMs);
    this.retry.unref?.();
  }

  private deliver(payload: string | undefined): void {
    let poke: Poke & { from?: string };
    try {
      poke = JSON.parse(payload ?? '') as Poke & { from?: string };
    } catch {
      return;
    }
    if (poke.from === this.self) return;
    try {
      this.received(poke);
    } catch (err) {
      this.log.warn({ err: String(err), poke: poke.kind }, 'a poke could not be acted on');
    }
  }
}
