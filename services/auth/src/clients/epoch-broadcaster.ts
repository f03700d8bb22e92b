import {
  AUTH_CACHE_HOLDERS_BUCKET,
  AUTH_CACHE_REGISTRATION_TTL_MS,
  AUTH_EPOCH_TICK_MS,
  epochAckSubject,
  epochSubject,
  NatsLink,
  Periodic,
  type EpochAck,
  type EpochTick,
  type Knex,
  type Logger,
  type NatsServer,
} from '@pier/kit';
import { JSONCodec, type JetStreamManager, type NatsConnection } from 'nats';
import type { AnswerCaches } from '../domain/answer-caches.ts';

const json = JSONCodec<unknown>();

/**
 * auth's side of the gateways' answer caches (kit's auth-epoch.ts): publishes the epoch
 * every tick, collects the holders' acknowledgements, and makes a change that raised the
 * epoch wait until every registered holder has acknowledged it or the lease has run out.
 */
export class EpochBroadcaster implements AnswerCaches {
  private readonly link: NatsLink;
  private readonly ticks: Periodic;
  private jsm?: JetStreamManager;
  /** The highest epoch each holder has acknowledged. */
  private readonly acked = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly db: Knex,
    private readonly installation: string,
    nats: NatsServer,
    private readonly leaseMs: number,
    /** Added to the wait, so a holder whose clock runs behind ours is covered too. */
    private readonly clockSkewMs: number,
    private readonly log: Logger,
  ) {
    this.link = new NatsLink(
      nats,
      (nc) => this.connected(nc),
      (err) => log.warn({ err: String(err) }, 'auth epoch: NATS unreachable; retrying'),
    );
    this.ticks = new Periodic(() => this.tick(), AUTH_EPOCH_TICK_MS, { log, what: 'auth epoch tick' });
  }

  start(): void {
    this.link.start();
    this.ticks.start();
  }

  async stop(): Promise<void> {
    await this.ticks.stop();
    await this.link.stop();
    for (const wake of this.waiters) wake();
  }

  private async connected(nc: NatsConnection): Promise<void> {
    const sub = nc.subscribe(epochAckSubject(this.installation));
    void (async () => {
      for await (const m of sub) {
        const ack = json.decode(m.data) as EpochAck;
        if (typeof ack?.holder !== 'string' || typeof ack.epoch !== 'number') continue;
        if ((this.acked.get(ack.holder) ?? -1) < ack.epoch) this.acked.set(ack.holder, ack.epoch);
        for (const wake of this.waiters) wake();
      }
    })();
    // Makes the bucket when no gateway has yet; it is then read through the stream's API.
    await nc.jetstream().views.kv(AUTH_CACHE_HOLDERS_BUCKET, { ttl: AUTH_CACHE_REGISTRATION_TTL_MS, history: 1 });
    this.jsm = await nc.jetstreamManager();
  }

  /** Reads the epoch and publishes it, with the time the read began. */
  async tick(): Promise<void> {
    const nc = this.link.connection;
    if (!nc) return;
    const at = Date.now();
    const { rows } = await this.db.raw<{ rows: { epoch: number }[] }>('select epoch from auth.auth_epoch where id = 1');
    const message: EpochTick = { epoch: rows[0]!.epoch, at, lease: this.leaseMs };
    nc.publish(epochSubject(this.installation), json.encode(message));
  }

  /**
   * Called right after the commit that raised the epoch to `epoch`. A holder whose lease
   * comes from a tick read before that commit loses it `leaseMs` after the commit at the
   * latest; one that saw a later tick has the new epoch. So waiting out the lease is always
   * enough, and acknowledgements from every registered holder end the wait sooner. A holder
   * that is not registered when the bucket is listed registered after the commit, and so
   * only ever caches answers read after it.
   */
  async invalidated(epoch: number): Promise<void> {
    const deadline = Date.now() + this.leaseMs + this.clockSkewMs;
    // Tell the holders now rather than at the next tick.
    await beforeDeadline(this.tick(), deadline).catch(() => undefined);
    const holders = await beforeDeadline(this.holders(), deadline).catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'auth epoch: cannot list the cache holders; waiting out the lease');
      return undefined;
    });
    if (holders) for (const h of this.acked.keys()) if (!holders.includes(h)) this.acked.delete(h);
    const done = () => holders !== undefined && holders.every((h) => (this.acked.get(h) ?? -1) >= epoch);
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      // Woken by each acknowledgement (to check again) or by the deadline.
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  /**
   * The holders registered now: the bucket's subjects of this installation whose last
   * message is a registration rather than a deletion. Read with two kinds of plain
   * request (stream info, last message by subject) rather than the KV client's keys(),
   * whose ordered consumer waits forever for a message that expired after it was counted
   * (seen as a role change that never answered).
   */
  private async holders(): Promise<string[]> {
    const jsm = this.jsm;
    if (!jsm) throw new Error('not connected to NATS');
    const stream = `KV_${AUTH_CACHE_HOLDERS_BUCKET}`;
    const prefix = `$KV.${AUTH_CACHE_HOLDERS_BUCKET}.${this.installation}.`;
    const info = await jsm.streams.info(stream, { subjects_filter: `${prefix}>` });
    const live = await Promise.all(
      Object.keys(info.state.subjects ?? {}).map(async (subject) => {
        // A registration that expired since the info was read is no holder: not found is no.
        const last = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => undefined);
        const op = last?.header?.get('KV-Operation');
        return last && op !== 'DEL' && op !== 'PURGE' ? subject.slice(prefix.length) : undefined;
      }),
    );
    return live.filter((h): h is string => h !== undefined);
  }
}

/** `work`, or a rejection once `deadline` (Unix ms) has passed, whichever comes first. */
function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer before the lease ran out')), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
