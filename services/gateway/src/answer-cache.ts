import { createHash, randomUUID } from 'node:crypto';
import {
  AUTH_CACHE_HOLDERS_BUCKET,
  AUTH_CACHE_LEASE_MS,
  AUTH_CACHE_REGISTRATION_TTL_MS,
  epochAckSubject,
  epochSubject,
  holderKey,
  NatsLink,
  Periodic,
  type EpochAck,
  type EpochTick,
  type Logger,
  type NatsServer,
} from '@pier/kit';
import { JSONCodec, type KV, type NatsConnection } from 'nats';
import type { Authenticated, AuthClient } from './auth-client.ts';

const json = JSONCodec<unknown>();

/** Renewal period of the holder's registration: several renewals fit in its TTL. */
const REGISTER_EVERY_MS = 1000;
/** A registration counts as live this much less than its TTL: the put's answer may come late. */
const REGISTRATION_MARGIN_MS = 1500;
/** How often uses answered from the cache are sent to auth for last_used_at. */
const USES_EVERY_MS = 500;
const MAX_ENTRIES = 100_000;

interface Entry {
  answer: Authenticated;
  epoch: number;
  until: number;
}

/** What the gateway's request path asks: auth's answer for a token, workspace and VPC. */
export interface Authenticates {
  authenticate(token: string, workspaceId: string, vpcId: string): Promise<Authenticated>;
}

export type CacheResult = 'hit' | 'miss' | 'off';

/**
 * Until when (this gateway's Unix ms) a tick keeps the cache usable. Anything that can
 * publish on the epoch subject can send a tick, so neither of its numbers is taken as it
 * stands: the lease is clamped to the gateway's own maximum (PIER_AUTH_CACHE_MAX_LEASE_MS),
 * and it runs from the moment the tick arrived by this clock, or from the tick's read
 * instant if that is earlier (a tick that waited in a reconnecting client's buffer must not
 * be younger than it is). A tick dated in the future therefore buys nothing.
 */
export function tickLeaseEnd(tick: Pick<EpochTick, 'at' | 'lease'>, receivedAt: number, maxLeaseMs: number): number {
  return Math.min(tick.at, receivedAt) + Math.min(Math.max(tick.lease, 0), maxLeaseMs);
}

/**
 * The gateway's cache of Authenticate answers, with no grace for revocation, downgrade,
 * removal or expiry (kit's auth-epoch.ts has the protocol, the gateway README the
 * argument). An answer is reused only
 * - while the entry's own `cache_until_ms` (credential expiry, half the identity token's
 *   life) is ahead;
 * - if it was read under the auth epoch this holder last saw, and a tick of that epoch is
 *   younger than its lease: a change raises the epoch and is not reported done until
 *   this holder acknowledged it or the lease ran out;
 * - while this holder's registration in the holders bucket is live, so every writer
 *   knows to wait for it.
 * Anything else (NATS away, ticks late, registration lapsed) is a miss: auth is asked, as
 * without a cache. Keys are the SHA-256 of the token with the workspace and VPC; the token
 * itself is never kept.
 */
export class AnswerCache implements Authenticates {
  private readonly holder = randomUUID();
  private readonly entries = new Map<string, Entry>();
  private readonly link: NatsLink;
  private readonly registration: Periodic;
  private readonly usesFlush: Periodic;
  private nc?: NatsConnection;
  private kv?: KV;
  /** The installation auth answers for: learnt from its first answer, then followed. */
  private installation?: string;
  private epoch = -1;
  private leaseUntil = 0;
  private registeredUntil = 0;
  /** Ticks read before this (Unix ms) are ignored: see `register`. */
  private ticksFrom = Infinity;
  private uses = { api_key_ids: new Set<string>(), session_ids: new Set<string>() };

  constructor(
    private readonly auth: AuthClient,
    nats: NatsServer,
    private readonly log: Logger,
    private readonly counted?: (result: CacheResult) => void,
    /** The longest lease any tick is granted (PIER_AUTH_CACHE_MAX_LEASE_MS). */
    private readonly maxLeaseMs = AUTH_CACHE_LEASE_MS,
  ) {
    this.link = new NatsLink(
      nats,
      (nc) => this.connected(nc),
      (err) => log.warn({ err: String(err) }, 'auth answer cache: NATS unreachable; asking auth every time'),
    );
    this.registration = new Periodic(() => this.register(), REGISTER_EVERY_MS, { log, what: 'auth answer cache registration' });
    this.usesFlush = new Periodic(() => this.sendUses(), USES_EVERY_MS, { log, what: 'recording cached uses' });
  }

  start(): void {
    this.link.start();
    this.registration.start();
    this.usesFlush.start();
  }

  async stop(): Promise<void> {
    await this.registration.stop();
    await this.usesFlush.stop();
    await this.sendUses().catch(() => undefined);
    if (this.installation) await this.kv?.delete(holderKey(this.installation, this.holder)).catch(() => undefined);
    await this.link.stop();
  }

  /** Seconds the cache stays usable from now; negative once it is not (-Infinity: no lease yet). */
  secondsLeft(now = Date.now()): number {
    const until = Math.min(this.leaseUntil, this.registeredUntil);
    return until === 0 ? -Infinity : (until - now) / 1000;
  }

  /** Whether answers may be served from the cache now. */
  usable(now = Date.now()): boolean {
    return now < this.leaseUntil && now < this.registeredUntil;
  }

  authenticate(token: string, workspaceId: string, vpcId: string): Promise<Authenticated> {
    const now = Date.now();
    if (!this.usable(now)) {
      this.counted?.('off');
      if (this.installation) return this.auth.authenticate(token, workspaceId, vpcId);
      return this.auth.authenticate(token, workspaceId, vpcId).then((answer) => {
        if (answer.installation) this.follow(answer.installation);
        return answer;
      });
    }
    const key = `${createHash('sha256').update(token).digest('base64')}\n${workspaceId}\n${vpcId}`;
    const hit = this.entries.get(key);
    if (hit && hit.epoch === this.epoch && now < hit.until) {
      this.counted?.('hit');
      if (hit.answer.api_key_id) this.uses.api_key_ids.add(hit.answer.api_key_id);
      else if (hit.answer.session_id) this.uses.session_ids.add(hit.answer.session_id);
      return Promise.resolve(hit.answer);
    }
    this.counted?.('miss');
    return this.auth.authenticate(token, workspaceId, vpcId).then((answer) => {
      // Kept only when read under the epoch this holder is at: an answer read before a
      // change that this holder has already seen must not come back into the cache.
      if (answer.installation === this.installation && answer.cache_until_ms > Date.now() && answer.epoch === this.epoch) {
        if (this.entries.size >= MAX_ENTRIES) this.evict();
        this.entries.set(key, { answer, epoch: answer.epoch, until: answer.cache_until_ms });
      }
      return answer;
    });
  }

  private evict(): void {
    const now = Date.now();
    for (const [k, e] of this.entries) if (e.epoch !== this.epoch || e.until <= now) this.entries.delete(k);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
  }

  private async connected(nc: NatsConnection): Promise<void> {
    this.kv = await nc.jetstream().views.kv(AUTH_CACHE_HOLDERS_BUCKET, { ttl: AUTH_CACHE_REGISTRATION_TTL_MS, history: 1 });
    this.nc = nc;
    if (this.installation) await this.subscribe(nc, this.installation);
  }

  /** Starts following the installation auth answers for (once: a gateway has one auth). */
  private follow(installation: string): void {
    if (this.installation) return;
    this.installation = installation;
    if (this.nc)
      void this.subscribe(this.nc, installation).catch((err: unknown) => this.log.warn({ err: String(err) }, 'auth answer cache: cannot follow the epoch'));
  }

  private async subscribe(nc: NatsConnection, installation: string): Promise<void> {
    const sub = nc.subscribe(epochSubject(installation));
    void (async () => {
      for await (const m of sub) this.apply(json.decode(m.data) as EpochTick, nc, installation);
    })();
    // Registered at once rather than at the first renewal.
    await this.register();
  }

  private apply(tick: EpochTick, nc: NatsConnection, installation: string): void {
    const receivedAt = Date.now();
    if (typeof tick?.epoch !== 'number' || typeof tick.at !== 'number' || typeof tick.lease !== 'number') return;
    if (tick.at < this.ticksFrom || tick.epoch < this.epoch) return;
    const leaseEnd = tickLeaseEnd(tick, receivedAt, this.maxLeaseMs);
    if (tick.epoch > this.epoch) {
      // Every entry of the old epoch is void from here on (they are dropped lazily).
      this.epoch = tick.epoch;
      this.leaseUntil = leaseEnd;
      const ack: EpochAck = { holder: this.holder, epoch: tick.epoch };
      nc.publish(epochAckSubject(installation), json.encode(ack));
    } else this.leaseUntil = Math.max(this.leaseUntil, leaseEnd);
  }

  /**
   * Puts this holder into the holders bucket. A writer that listed the bucket without us
   * did so before this put was answered, and did not wait for us: so after a first
   * registration, or one after a lapse, only ticks read after the answer count, and they
   * carry every epoch raised before that listing.
   */
  private async register(): Promise<void> {
    if (!this.kv || !this.installation) return;
    const sent = Date.now();
    await this.kv.put(holderKey(this.installation, this.holder), json.encode({ at: sent }));
    const answered = Date.now();
    if (answered >= this.registeredUntil) {
      this.ticksFrom = answered;
      this.leaseUntil = 0;
    }
    this.registeredUntil = sent + AUTH_CACHE_REGISTRATION_TTL_MS - REGISTRATION_MARGIN_MS;
  }

  private async sendUses(): Promise<void> {
    if (this.uses.api_key_ids.size === 0 && this.uses.session_ids.size === 0) return;
    const batch = this.uses;
    this.uses = { api_key_ids: new Set(), session_ids: new Set() };
    try {
      await this.auth.recordUses([...batch.api_key_ids], [...batch.session_ids]);
    } catch (err) {
      // Kept for the next pass: auth may be back by then.
      for (const id of batch.api_key_ids) this.uses.api_key_ids.add(id);
      for (const id of batch.session_ids) this.uses.session_ids.add(id);
      throw err;
    }
  }
}
