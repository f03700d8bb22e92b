// Followers on every instance hear of newly stored events through PostgreSQL's
// LISTEN/NOTIFY: the consumer's insert notifies in its transaction, so the notification
// arrives once the events are visible. A lost notification (the listening connection
// down) costs latency only: followers also look every PIER_EVENTS_FOLLOW_POLL_MS.
import type { Knex, Logger } from '@pier/kit';
import { STORED_CHANNEL } from './store.ts';

interface RawConnection {
  query(sql: string): Promise<unknown>;
  on(event: 'notification', fn: () => void): void;
  on(event: 'error' | 'end', fn: (err?: unknown) => void): void;
}

export class StoredEventsSignal {
  private readonly waiters = new Set<() => void>();
  private conn?: RawConnection;
  private stopped = false;
  private retry?: NodeJS.Timeout;
  private warned = false;

  constructor(
    private readonly db: Knex,
    private readonly log: Logger,
  ) {}

  start(): void {
    void this.connect();
  }

  /** Wakes every waiting follower of this instance. */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Settles on the next notification, after `ms`, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.wake();
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await this.db.client.destroyRawConnection(conn).catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    try {
      // Its own connection, outside the pool: LISTEN lasts as long as the session.
      const conn = (await this.db.client.acquireRawConnection()) as RawConnection;
      const lost = (err?: unknown) => {
        if (this.conn !== conn) return;
        this.conn = undefined;
        void this.db.client.destroyRawConnection(conn).catch(() => undefined);
        this.again(err ?? 'connection ended');
      };
      conn.on('error', lost);
      conn.on('end', lost);
      conn.on('notification', () => this.wake());
      this.conn = conn;
      await conn.query(`LISTEN ${STORED_CHANNEL}`);
      if (this.stopped) return void (await this.stop());
      if (this.warned) this.log.info('listening for stored events again');
      this.warned = false;
    } catch (err) {
      this.again(err);
    }
  }

  private again(err: unknown): void {
    if (this.stopped) return;
    if (!this.warned) this.log.warn({ err: String(err) }, 'cannot listen for stored events; followers poll until it is back');
    this.warned = true;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), 1000);
    this.retry.unref?.();
  }
}
