// Safe retries: a write sent with an `Idempotency-Key` runs once; a retry with the same key
// and the same request gets the first answer again (`Idempotent-Replayed: true`) and
// causes nothing. Each service keeps its keys in its own schema, beside the records the
// writes change, so the mark that ties a key to the resource it creates commits in the
// same transaction as the resource's first row.
//
// "Still running" is a PostgreSQL session advisory lock, held on one connection of its
// own for as long as the request runs. A process that dies (SIGKILL, a lost machine)
// loses its connection and so its locks at once: a retry never waits out a lease, and a
// key whose row has no answer and whose lock is free belongs to an attempt that died. Such
// an attempt is taken up again once the service's reconcilers have finished or undone what
// the dead process left (`recovered`): if it had made its resource, the route's `replay`
// answers with it (or undoes what is left of it); otherwise the request runs again.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Knex } from 'knex';
import { ConflictError, InputError, UnavailableError, UnprocessableError } from './errors.ts';
import { Periodic } from './periodic.ts';
import type { Logger } from './logger.ts';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const IDEMPOTENT_REPLAYED_HEADER = 'idempotent-replayed';
/** How long an answer is kept for a retry (as Stripe's API does). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** Rows deleted per statement when expired keys are trimmed. */
const TRIM_BATCH = 5000;
const TRIM_EVERY_MS = 10 * 60_000;
/** Longest a retry of a dead attempt waits for the reconcilers' first pass. */
const RECOVERY_WAIT_MS = 30_000;

/** The table; every service creates it in its own schema with this migration step. */
export async function createIdempotencyTable(db: Knex): Promise<void> {
  await db.schema.createTable('idempotency_keys', (t) => {
    t.text('scope').notNullable();
    t.text('key').notNullable();
    t.text('fingerprint').notNullable();
    /** The resource the request made, written in the same transaction as its row (insertForKey). */
    t.text('resource_id');
    t.integer('status');
    t.jsonb('body');
    t.jsonb('headers');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.primary(['scope', 'key']);
    t.index(['created_at']);
  });
}

/** The key of a request, validated: 1–255 printable ASCII characters. Undefined when absent. */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!/^[\x20-\x7e]{1,255}$/.test(header)) {
    throw new InputError('Idempotency-Key: must be 1 to 255 printable ASCII characters (a UUID is a good choice)', 'invalid_idempotency_key', {
      field: 'Idempotency-Key',
    });
  }
  return header;
}

/** Whose keys a request's key is among: its workspace's, or for paths outside one its user's. */
export function idempotencyScope(workspaceId: string | undefined, subject: string): string {
  return workspaceId ? `workspace:${workspaceId}` : `user:${subject}`;
}

/** The answer to a key sent before with another request: here, or by the gateway when another service had it. */
export function idempotencyKeyReused(): UnprocessableError {
  return new UnprocessableError(
    'this Idempotency-Key was used for a different request (method, path or body); send a new key with a new request',
    'idempotency_key_reused',
  );
}

/** What a request is, for telling a retry from another request under the same key. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n`)
    .update(canonicalJson(body ?? null))
    .digest('base64url');
}

/** JSON with object keys sorted, so a client that orders fields differently on a retry is the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An answer as the HTTP layer sends it; `keep: false` for answers never replayed (5xx, streams). */
export interface IdempotentAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  keep: boolean;
  /** What a replay answers instead of `body`, when the body carries a credential shown only once. */
  replayBody?: unknown;
}

const current = new AsyncLocalStorage<{ scope: string; key: string }>();

/**
 * Runs `insert` (a new resource's first row, pending or visible) and, in a keyed request,
 * ties the row's id to the key in the same transaction: a retry after a crash then finds
 * the resource the dead attempt made (the route's `replay`) rather than making another.
 */
export async function insertForKey<R extends { id: string }>(db: Knex, insert: (q: Knex | Knex.Transaction) => Promise<R>): Promise<R> {
  const request = current.getStore();
  if (!request) return insert(db);
  return db.transaction(async (trx) => {
    const row = await insert(trx);
    await trx('idempotency_keys').where(request).update({ resource_id: row.id });
    return row;
  });
}

interface KeyRow {
  fingerprint: string;
  resource_id: string | null;
  status: number | null;
  body: unknown;
  headers: Record<string, string> | null;
  created_at: Date | string;
}

export class IdempotencyKeys {
  private readonly locks: SessionLocks;
  private readonly trimmer: Periodic;

  constructor(
    private readonly db: Knex,
    databaseUrl: string,
    private readonly service: string,
    private readonly log: Logger,
    /** Settles once the reconcilers have handled what a previous process left. */
    private readonly recovered: () => Promise<void> = async () => undefined,
    connectTimeoutMs?: number,
  ) {
    this.locks = new SessionLocks(databaseUrl, `pier-${service}-idempotency`, log, connectTimeoutMs);
    this.trimmer = new Periodic(() => this.trim(), TRIM_EVERY_MS, { log, what: 'idempotency key trim' });
  }

  start(): void {
    this.trimmer.start(() => this.trim());
  }

  async stop(): Promise<void> {
    await this.trimmer.stop();
    await this.locks.close();
  }

  /**
   * Runs `attempt` once per (scope, key): the first time, or again for an attempt that died
   * (with the resource it had made visible, if any). Answers a finished one from the table.
   */
  async run(
    scope: string,
    key: string,
    fingerprint: string,
    attempt: (madeResourceId: string | undefined) => Promise<IdempotentAnswer>,
  ): Promise<{ answer: IdempotentAnswer; replayed: boolean }> {
    const lock = createHash('sha256').update(`${this.service}\0${scope}\0${key}`).digest().readBigInt64BE(0);
    if (!(await this.locks.tryLock(lock))) {
      throw new ConflictError('a request with this Idempotency-Key is still running; retry once it has answered', 'idempotency_key_in_use');
    }
    try {
      const where = { scope, key };
      let row = (await this.db('idempotency_keys').where(where).first()) as KeyRow | undefined;
      if (row && new Date(row.created_at).getTime() < Date.now() - IDEMPOTENCY_TTL_MS) {
        await this.db('idempotency_keys').where(where).delete();
        row = undefined;
      }
      if (row && row.fingerprint !== fingerprint) {
        throw idempotencyKeyReused();
      }
      if (row && row.status !== null) {
        return { answer: { status: row.status, body: row.body ?? undefined, headers: row.headers ?? undefined, keep: true }, replayed: true };
      }
      if (row) {
        // The attempt that inserted the row died before answering: let recovery settle first.
        this.log.info({ scope, resourceId: row.resource_id }, 'taking up a keyed request whose first attempt died');
        await Promise.race([this.recovered(), new Promise((r) => setTimeout(r, RECOVERY_WAIT_MS).unref())]);
      } else {
        await this.db('idempotency_keys').insert({ ...where, fingerprint });
      }
      const answer = await current.run(where, () => attempt(row?.resource_id ?? undefined));
      await this.keep(where, answer);
      return { answer, replayed: false };
    } finally {
      await this.locks.unlock(lock);
    }
  }

  /** Stores the answer for retries; a 5xx frees the key for a retry instead (one that made nothing). */
  private async keep(where: { scope: string; key: string }, answer: IdempotentAnswer): Promise<void> {
    try {
      if (answer.keep && answer.status < 500) {
        await this.db('idempotency_keys')
          .where(where)
          .update({
            status: answer.status,
            body: JSON.stringify(answer.replayBody ?? answer.body ?? null),
            headers: answer.headers ? JSON.stringify(answer.headers) : null,
            completed_at: this.db.fn.now(),
          });
      } else {
        // A 5xx after the resource's first row was written (insertForKey) stays unanswered:
        // the retry takes it up as a dead attempt's, and the route's `replay` answers with
        // that resource or undoes it, rather than making a second one (or a name conflict).
        await this.db('idempotency_keys').where(where).whereNull('resource_id').delete();
      }
    } catch (err) {
      // The answer stands; a retry finds the row unanswered and takes it up as a dead attempt's.
      this.log.warn({ err: String(err) }, 'could not store the answer of a keyed request');
    }
  }

  /** Deletes expired keys, a batch per statement. */
  async trim(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const cutoff = new Date(Date.now() - IDEMPOTENCY_TTL_MS);
      const n = await this.db('idempotency_keys')
        .whereIn(['scope', 'key'], this.db('idempotency_keys').select('scope', 'key').where('created_at', '<', cutoff).limit(TRIM_BATCH))
        .delete();
      deleted += n;
      if (n < TRIM_BATCH) return deleted;
    }
  }
}

/**
 * Session advisory locks on one dedicated connection: held across the pool's connections
 * and the request's own transactions, and released by PostgreSQL when this process dies.
 * If that connection drops, every lock it held is gone; it is made again on next use.
 */
class SessionLocks {
  private client?: Promise<pg.Client>;
  private readonly held = new Set<bigint>();

  constructor(
    private readonly url: string,
    private readonly applicationName: string,
    private readonly log: Logger,
    private readonly connectTimeoutMs = 1500,
  ) {}

  async tryLock(key: bigint): Promise<boolean> {
    // A session may take its own advisory lock again, so requests of this process (which share
    // the session) are kept apart here, before the database is asked.
    if (this.held.has(key)) return false;
    this.held.add(key);
    try {
      const { rows } = await this.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [key.toString()]);
      if (!rows[0]!.ok) this.held.delete(key);
      return rows[0]!.ok;
    } catch (err) {
      this.held.delete(key);
      throw err;
    }
  }

  async unlock(key: bigint): Promise<void> {
    this.held.delete(key);
    await this.query('select pg_advisory_unlock($1)', [key.toString()]).catch((err) =>
      this.log.warn({ err: String(err) }, 'could not release an idempotency lock; it goes with its connection'),
    );
  }

  async close(): Promise<void> {
    const client = await this.client?.catch(() => undefined);
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await (await this.connection()).query<R>(text, values);
    } catch (err) {
      throw new UnavailableError(`the database cannot be reached: ${(err as Error).message}`);
    }
  }

  private connection(): Promise<pg.Client> {
    this.client ??= (async () => {
      const client = new pg.Client({ connectionString: this.url, application_name: this.applicationName, connectionTimeoutMillis: this.connectTimeoutMs });
      const drop = (err?: Error) => {
        this.log.warn({ err: err ? String(err) : 'connection ended' }, 'idempotency lock connection lost; keyed requests running now lose their locks');
        this.client = undefined;
      };
      client.on('error', drop);
      client.on('end', () => {
        if (this.client) drop();
      });
      try {
        await client.connect();
      } catch (err) {
        this.client = undefined;
        throw err;
      }
      return client;
    })();
    return this.client;
  }
}
