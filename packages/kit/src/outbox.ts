import { connect, type NatsConnection, type JetStreamClient, RetentionPolicy, StorageType } from 'nats';
import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import type { Logger } from './logger.ts';
import { currentRequestContext } from './request-context.ts';
import { natsConnectOptions, type NatsServer } from './nats-connect.ts';

export const EVENTS_STREAM = 'PIER_EVENTS';

export interface PierEvent {
  /** Event kind, for example `api_key.created`; becomes a subject token (dots become `_`). */
  kind: string;
  workspaceId: string | null;
  vpcId?: string | null;
  /** Id of the resource the event is about. */
  resourceId: string;
  /** The resource's kind; the event kind's first word when absent (`secret.created` → `secret`). */
  resourceKind?: string;
  /** The resource's name; `data.name` when absent. */
  resourceName?: string | null;
  /**
   * The platform's own change (a status observed, a deployment finished), even when a
   * request's handling happened to notice it (a read refreshing a status): no actor, no
   * source address.
   */
  byPlatform?: boolean;
  /** What happened. Never a secret value, password, token or a command's arguments: see scrubEventData. */
  data: Record<string, unknown>;
}

/** Keys of event data that may never be stored, at any depth (scrubEventData). */
const SECRET_KEYS =
  /^(values?|password|passwd|secret|secrets|token|tokens|api_key|key_hash|token_hash|args|argv|arguments|command|private_key|credentials?|connection_string|external_url|internal_url|url_with_password)$/i;
/** A URL's user-information part: `scheme://user:password@`. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(?::[^\s/@]*)?@/gi;
/** Pier's own credentials, should one be quoted in a message: API keys, webhook secrets, JWTs (a bare CLI session token is 64 hex digits, as an image digest is: not told apart). */
const TOKEN_SHAPES = /\b(sk-[0-9a-f]{64}|whsec_[A-Za-z0-9+/=]{16,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})/g;

/**
 * The safety net under every event's data: keys that name secret material are removed,
 * and strings have a URL's password and anything shaped like a Pier token replaced. The
 * events themselves are written to carry none (each service's domain/events.ts); this
 * keeps a future field or an error message that quotes a URL from leaking one.
 */
export function scrubEventData(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(URL_USERINFO, '$1[redacted]@').replace(TOKEN_SHAPES, '[redacted]');
  if (Array.isArray(value)) return value.map(scrubEventData);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!SECRET_KEYS.test(k)) out[k] = scrubEventData(v);
    return out;
  }
  return value;
}

/** The resource an event is about, as the audit log shows it. */
export function eventResource(event: PierEvent): { kind: string; id: string; name: string | null } {
  const name = event.resourceName !== undefined ? event.resourceName : typeof event.data.name === 'string' ? event.data.name : null;
  return { kind: event.resourceKind ?? event.kind.split('.')[0]!, id: event.resourceId, name };
}

export function eventSubject(e: PierEvent): string {
  const token = (v: string | null | undefined) => (v ? v.replace(/[.*>\s]/g, '_') : '_');
  return `pier.events.${token(e.workspaceId)}.${token(e.vpcId)}.${token(e.kind.replace(/\./g, '_'))}.${token(e.resourceId)}`;
}

/** The outbox table; every service creates it in its own schema with this migration step. */
export async function createOutboxTable(db: Knex): Promise<void> {
  await db.schema.createTable('outbox', (t) => {
    t.bigIncrements('id');
    t.text('subject').notNullable();
    t.text('kind').notNullable();
    t.jsonb('payload').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('published_at', { useTz: true });
    t.index(['published_at', 'id']);
  });
}

/**
 * Writes an event in the caller's transaction: the event exists exactly when the change
 * it describes was committed. The actor and source address come from the request running
 * now (request-context.ts): null in background work, the platform's own changes.
 */
export async function writeEvent(trx: Knex | Knex.Transaction, event: PierEvent): Promise<void> {
  const ctx = event.byPlatform ? undefined : currentRequestContext();
  await trx('outbox').insert({
    subject: eventSubject(event),
    kind: event.kind,
    payload: {
      id: randomUUID(),
      kind: event.kind,
      workspace_id: event.workspaceId,
      vpc_id: event.vpcId ?? null,
      resource_id: event.resourceId,
      resource: eventResource(event),
      actor: ctx?.actor ?? null,
      source_ip: ctx?.sourceIp ?? null,
      data: scrubEventData(event.data),
      occurred_at: new Date().toISOString(),
    },
  });
}

export async function ensureEventsStream(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.info(EVENTS_STREAM);
  } catch {
    await jsm.streams.add({
      name: EVENTS_STREAM,
      subjects: ['pier.events.>'],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      duplicate_window: 2 * 60 * 1_000_000_000, // ns: covers a relay retrying after a crash
    });
  }
}

/** How the relay publishes and trims (kit's serviceEnv gives every service the same settings). */
export interface OutboxRelayOptions {
  /** Pause between passes when nothing was poked (default 200 ms). */
  intervalMs?: number;
  /** Rows published, then marked in one UPDATE, per batch (default 500). */
  publishBatch?: number;
  /** Published rows older than this are deleted (default 3600 s). */
  retentionSeconds?: number;
  /** Rows deleted per DELETE statement when trimming (default 5000). */
  trimBatch?: number;
  /** Least time between two trims (default 60 s). */
  trimEveryMs?: number;
}

/** DELETE statements of one background trim, before the relay publishes again. */
const TRIM_BATCHES_PER_PASS = 20;

/** What a trim did: rows deleted, in how many DELETE statements. */
export interface TrimResult {
  deleted: number;
  batches: number;
}

/**
 * Publishes committed outbox rows to JetStream in order, then marks them published. A
 * broker outage only delays events: rows stay until a publish is acknowledged, and the
 * outbox id is the JetStream message id, so a retry after a crash is deduplicated. It also
 * keeps the table bounded: published rows older than the retention are deleted, a batch
 * per statement, so no delete holds many row locks or bloats one transaction.
 */
export class OutboxRelay {
  private nc?: NatsConnection;
  private js?: JetStreamClient;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private running?: Promise<void>;
  private wake = false;
  private lastTrim = 0;
  private connecting?: Promise<JetStreamClient>;
  private readonly opts: Required<OutboxRelayOptions>;

  constructor(
    private readonly db: Knex,
    /** The owning service's name: with the row id it makes the JetStream message id. */
    private readonly source: string,
    private readonly nats: NatsServer,
    private readonly log: Logger,
    options: OutboxRelayOptions | number = {},
  ) {
    const o = typeof options === 'number' ? { intervalMs: options } : options;
    this.opts = {
      intervalMs: o.intervalMs ?? 200,
      publishBatch: o.publishBatch ?? 500,
      retentionSeconds: o.retentionSeconds ?? 3600,
      trimBatch: o.trimBatch ?? 5000,
      trimEveryMs: o.trimEveryMs ?? 60_000,
    };
  }

  start(): void {
    this.schedule(0);
  }

  /** Ask for a pass soon, for example right after a write. */
  poke(): void {
    if (this.running) this.wake = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.work()
        .catch((err) => {
          this.log.warn({ err: String(err) }, 'outbox relay pass failed; will retry');
          void this.dropConnection();
        })
        .finally(() => {
          this.running = undefined;
          const next = this.wake ? 0 : this.opts.intervalMs;
          this.wake = false;
          this.schedule(next);
        });
    }, ms);
    this.timer.unref?.();
  }

  private async work(): Promise<void> {
    await this.pass();
    if (Date.now() - this.lastTrim >= this.opts.trimEveryMs) {
      const { deleted, batches } = await this.trim(TRIM_BATCHES_PER_PASS);
      if (deleted > 0) this.log.debug({ deleted, batches }, 'outbox trimmed');
      // More left (a large backlog of old rows): trim again after the next publish pass,
      // rather than hold new events back until it is all gone.
      if (batches < TRIM_BATCHES_PER_PASS) this.lastTrim = Date.now();
    }
  }

  private connection(): Promise<JetStreamClient> {
    if (this.js && this.nc && !this.nc.isClosed()) return Promise.resolve(this.js);
    // One connection attempt at a time: a readiness check may ask while a pass connects.
    this.connecting ??= (async () => {
      const nc = await connect({ ...natsConnectOptions(this.nats), timeout: 2000, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
      if (this.stopped) {
        await nc.close();
        throw new Error('outbox relay stopped');
      }
      this.nc = nc;
      await ensureEventsStream(nc);
      this.js = nc.jetstream({ timeout: 2000 });
      return this.js;
    })().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async dropConnection(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    await nc?.close().catch(() => undefined);
  }

  /**
   * Answers once NATS has answered a round trip on the relay's own connection (readiness:
   * can events leave now?). The caller bounds the wait: while the broker is away the
   * connection reconnects, and the answer waits for it.
   */
  async checkNats(): Promise<void> {
    await this.connection();
    await this.nc!.flush();
  }

  /**
   * One pass: publish every pending row, oldest first. Returns how many were published.
   * Each batch is claimed with `FOR UPDATE SKIP LOCKED`: several instances of a service
   * relay disjoint batches, so each event is published once (JetStream's de-duplication by
   * message id remains behind it, for a process that dies between publish and commit).
   */
  async pass(): Promise<number> {
    let published = 0;
    for (;;) {
      // Connected before the batch is claimed: a broker away holds no rows locked.
      const js = await this.connection();
      let failure: unknown;
      const count = await this.db.transaction(async (trx) => {
        const rows: { id: number; subject: string; payload: unknown; at_us: number }[] = await trx('outbox')
          .whereNull('published_at')
          .orderBy('id')
          .limit(this.opts.publishBatch)
          .forUpdate()
          .skipLocked()
          .select('id', 'subject', 'payload', trx.raw('(extract(epoch from created_at) * 1000000)::bigint as at_us'));
        if (rows.length === 0) return -1;
        const done: number[] = [];
        try {
          for (const row of rows) {
            // The row's creation instant is part of the id: outbox ids restart at 1 in every
            // database, and databases sharing one NATS (parallel test files, several
            // platforms) must not have each other's events dropped as duplicates.
            await js.publish(row.subject, JSON.stringify(row.payload), { msgID: `${this.source}:${row.id}:${row.at_us}` });
            done.push(row.id);
          }
        } catch (err) {
          // What was acknowledged before the failure is committed as published below.
          failure = err;
        }
        if (done.length > 0) await trx('outbox').whereIn('id', done).update({ published_at: trx.fn.now() });
        return done.length;
      });
      if (count < 0) return published;
      published += count;
      if (failure) throw failure;
    }
  }

  /** Deletes published rows older than the retention, `trimBatch` rows per statement, at most `maxBatches` statements. */
  async trim(maxBatches = Infinity): Promise<TrimResult> {
    const result: TrimResult = { deleted: 0, batches: 0 };
    const cutoff = this.db.raw(`now() - make_interval(secs => ?)`, [this.opts.retentionSeconds]);
    while (result.batches < maxBatches) {
      if (this.stopped) return result;
      const oldest = this.db('outbox').where('published_at', '<', cutoff).orderBy('published_at').limit(this.opts.trimBatch).select('id');
      const deleted: number = await this.db('outbox').whereIn('id', oldest).delete();
      if (deleted === 0) return result;
      result.deleted += deleted;
      result.batches++;
      if (deleted < this.opts.trimBatch) return result;
    }
    return result;
  }

  /** Rows not yet published, and the age in seconds of the oldest of them (0 when none). */
  async backlog(): Promise<{ rows: number; oldestSeconds: number }> {
    const row = await this.db('outbox')
      .whereNull('published_at')
      .first(this.db.raw('count(*)::int as rows'), this.db.raw('coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as "oldestSeconds"'));
    return { rows: Number(row?.rows ?? 0), oldestSeconds: Number(row?.oldestSeconds ?? 0) };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.connecting?.catch(() => undefined);
    await this.dropConnection();
  }
}
