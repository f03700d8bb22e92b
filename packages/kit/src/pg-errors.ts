import { unreachableCode } from './cluster-errors.ts';
import { ConflictError, InputError, PierError, UnavailableError } from './errors.ts';

// PostgreSQL's errors in the domain's terms, in one table. Stores call translatePgError
// with their own messages for the conflicts they expect; the HTTP and gRPC edges fall back
// on pgErrorOf for anything a store let through, so a database error is never a bare 500.

export interface PgErrorMessages {
  /** 23505: a unique index refused the row (a duplicate name, say). */
  unique?: string;
  /** 23503: the row points at something missing, or something still points at it. */
  foreignKey?: string;
  /**
   * 23505 by the unique index (or constraint) that refused the row, for a table with more
   * than one: each its own message, code and offending field. One not listed gets `unique`.
   */
  constraints?: Record<string, UniqueConflict>;
}

/** What a unique violation of one constraint means to the caller. */
export interface UniqueConflict {
  message: string;
  code: string;
  /** The request field the conflict is about, returned as `field`. */
  field?: string;
}

// Node's socket errors (cluster-errors.ts, the list every peer shares) and PostgreSQL's
// connection classes: the database is out of reach.
// 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 53300 too many connections.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
// 22P02 invalid text representation, 22001 too long, 22003 out of range, 22007/22008 bad date,
// 22023 invalid parameter, 23502 not null, 23514 check.
const INVALID_SQLSTATES = new Set(['22P02', '22001', '22003', '22007', '22008', '22023', '23502', '23514']);

function isSqlState(code: unknown): code is string {
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/** The domain error a PostgreSQL (or connection) failure stands for; undefined when it is none of those. */
export function pgErrorOf(err: unknown, messages: PgErrorMessages = {}): PierError | undefined {
  const e = err as { code?: unknown; message?: unknown; column?: string; constraint?: string; name?: string } | undefined;
  const code = e?.code;
  const message = typeof e?.message === 'string' ? e.message : '';
  if (unreachableCode(err)) return unavailable();
  // knex's pool gives up waiting for a connection the database never grants; pg gives up
  // on a connection not established within its connectionTimeoutMillis ("timeout expired").
  if (e?.name === 'KnexTimeoutError' || /Connection terminated|timeout exceeded when trying to connect|^timeout expired$/i.test(message)) return unavailable();
  if (!isSqlState(code)) return undefined;
  if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code)) return unavailable();
  if (code === '23505') {
    const named = e?.constraint ? messages.constraints?.[e.constraint] : undefined;
    if (named) return new ConflictError(named.message, named.code, named.field ? { field: named.field } : undefined);
    return new ConflictError(messages.unique ?? 'a record with these values already exists', 'already_exists');
  }
  if (code === '23503')
    return new ConflictError(messages.foreignKey ?? 'the record refers to one that does not exist, or is still referred to', 'reference_conflict');
  // Serialization failures and deadlocks: the same request, retried, would succeed.
  if (code === '40001' || code === '40P01') return new ConflictError('a concurrent change interfered with this request; retry it', 'concurrent_update');
  if (INVALID_SQLSTATES.has(code)) {
    const field = e?.column;
    return new InputError(
      field ? `${field}: value refused by the database` : 'a value was refused by the database',
      'invalid_request',
      field ? { field } : undefined,
    );
  }
  return undefined;
}

/** Throws the domain error for a PostgreSQL failure, or the failure itself when it maps to none. */
export function translatePgError(err: unknown, messages: PgErrorMessages = {}): never {
  if (err instanceof PierError) throw err;
  throw pgErrorOf(err, messages) ?? err;
}

function unavailable(): UnavailableError {
  return new UnavailableError('the platform database is unavailable; retry shortly', 'unavailable');
}
