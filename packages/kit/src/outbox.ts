import { connect, type NatsConnection, type JetStreamClient, RetentionPolicy, StorageType } from 'nats';
import type { Knex } from 'knex';
import type { Logger } from './logger.ts';

export const EVENTS_STREAM = 'PIER_EVENTS';

export interface PierEvent {
  /** Event kind, for example `api_key.created`; becomes a subject token (dots become `_`). */
  kind: string;
  workspaceId: string | null;
  vpcId?: string | null;
  /** Id of the resource the event is about. */
  resourceId: string;
  data: Record<string, unknown>;
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
 * it describes was committed.
 */
export async function writeEvent(trx: Knex | Knex.Transaction, event: PierEvent): Promise<void> {
  await trx('outbox').insert({
    subject: eventSubject(event),
    kind: event.kind,
    payload: {
      kind: event.kind,
      workspace_id: event.workspaceId,
      vpc_id: event.vpcId ?? null,
      resource_id: event.resourceId,
      data: event.data,
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

/**
 * Publishes committed outbox rows to JetStream in order, then marks them published. A
 * broker outage only delays events: rows stay until a publish is acknowledged, and the
 * outbox id is the JetStream message id, so a retry after a crash is deduplicated.
 */
export class OutboxRelay {
  private nc?: NatsConnection;
  private js?: JetStreamClient;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private running?: Promise<void>;
  private wake = false;

  constructor(
    private readonly db: Knex,
    /** The owning service's name: with the row id it makes the JetStream message id. */
    private readonly source: string,
    private readonly natsUrl: string,
    private readonly log: Logger,
    private readonly intervalMs = 200,
  ) {}

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
      this.running = this.pass()
        .then(() => undefined)
        .catch((err) => {
          this.log.warn({ err: String(err) }, 'outbox relay pass failed; will retry');
          void this.dropConnection();
        })
        .finally(() => {
          this.running = undefined;
          const next = this.wake ? 0 : this.intervalMs;
          this.wake = false;
          this.schedule(next);
        });
    }, ms);
    this.timer.unref?.();
  }

  private async connection(): Promise<JetStreamClient> {
    if (this.js && this.nc && !this.nc.isClosed()) return this.js;
    this.nc = await connect({ servers: this.natsUrl, timeout: 2000, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
    await ensureEventsStream(this.nc);
    this.js = this.nc.jetstream({ timeout: 2000 });
    return this.js;
  }

  private async dropConnection(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    await nc?.close().catch(() => undefined);
  }

  /** One pass: publish every pending row, oldest first. Returns how many were published. */
  async pass(): Promise<number> {
    let published = 0;
    for (;;) {
      const rows: { id: number; subject: string; payload: unknown; at_us: number }[] = await this.db('outbox')
        .whereNull('published_at')
        .orderBy('id')
        .limit(100)
        .select('id', 'subject', 'payload', this.db.raw('(extract(epoch from created_at) * 1000000)::bigint as at_us'));
      if (rows.length === 0) return published;
      const js = await this.connection();
      for (const row of rows) {
        // The row's creation instant is part of the id: outbox ids restart at 1 in every
        // database, and databases sharing one NATS (parallel test files, several
        // platforms) must not have each other's events dropped as duplicates.
        await js.publish(row.subject, JSON.stringify(row.payload), { msgID: `${this.source}:${row.id}:${row.at_us}` });
        await this.db('outbox').where({ id: row.id }).update({ published_at: this.db.fn.now() });
        published++;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.dropConnection();
  }
}
