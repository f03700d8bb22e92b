import pg from 'pg';
import Cursor from 'pg-cursor';
import { InputError, UnavailableError, unreachableCode } from '@pier/kit';
import type { SqlTarget } from '../domain/cluster-port.ts';
import type { ConsoleLimits, PostgresSqlEngine, QueryResult, SlowQuery, TableSchema } from '../domain/sql-port.ts';

// PostgreSQL side of the console, schema inspector and slow-query log. Console
// statements log in as the database's own account (the app user) with its own password:
// a privileged login that merely SET ROLE to it could be switched back with RESET ROLE,
// SET ROLE NONE or SET SESSION AUTHORIZATION, from inside a DO block or a function. The
// schema inspector and slow-query log run as `pier_console`, never on a customer's SQL.

const ms = (v: number) => Math.round(v * 1000) / 1000;

/** Values as JSON can hold them: numbers and booleans typed, the rest as PostgreSQL prints it. */
const consoleTypes = {
  getTypeParser(oid: number): (v: string) => unknown {
    switch (oid) {
      case 16:
        return (v) => v === 't';
      case 21:
      case 23:
      case 26:
        return Number;
      case 20:
        return (v) => (Number.isSafeInteger(Number(v)) ? Number(v) : v);
      case 700:
      case 701:
        return (v) => (Number.isFinite(Number(v)) ? Number(v) : v);
      case 114:
      case 3802:
        return (v) => JSON.parse(v);
      default:
        return (v) => v;
    }
  },
};

function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return unreachableCode(err) !== undefined || /timeout expired|Connection terminated/i.test(e?.message ?? '');
}

/** An engine error is the caller's (400 with the engine's message); a connection error is 503. */
function translate(err: unknown): never {
  const e = err as { code?: string; message?: string; severity?: string };
  if (isConnectionError(err)) throw new UnavailableError(`cannot reach the database: ${e.message}`, 'database_unavailable');
  if (e?.severity || (e?.code && /^[0-9A-Z]{5}$/.test(e.code))) {
    throw new InputError(e.message ?? 'SQL error', 'sql_error', { sqlstate: e.code });
  }
  throw err;
}

interface SessionOptions {
  /** Log in as the database's own account (console statements), else as pier_console. */
  asApp: boolean;
  timeoutMs?: number;
}

/**
 * Console connections are pooled per target and session settings: a new connection
 * costs a SCRAM handshake (about 20 ms here), several times the statement itself. A
 * connection goes back to its pool only after `DISCARD ALL` succeeds, so no session state a
 * statement left (SET, SET ROLE, temporary tables, prepared statements) reaches the next
 * caller; a session left inside a transaction cannot be discarded and is closed instead.
 */
class SessionPools {
  private readonly pools = new Map<string, pg.Pool>();

  pool(t: SqlTarget, opts: SessionOptions): pg.Pool {
    const login = opts.asApp ? t.app : { user: t.user, password: t.password, open: undefined };
    const timeout = opts.timeoutMs ?? 15_000;
    const key = JSON.stringify([t.host, t.port, login.user, login.password, !!login.open, t.database, timeout]);
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new pg.Pool({
        host: t.host,
        port: t.port,
        user: login.user,
        password: login.password,
        database: t.database,
        ...(login.open ? { stream: login.open } : {}),
        application_name: 'pier-console',
        connectionTimeoutMillis: 5000,
        statement_timeout: timeout,
        max: 2,
        idleTimeoutMillis: 30_000,
        allowExitOnIdle: true,
      });
      pool.on('error', () => undefined); // an idle connection dropped (database deleted): the pool replaces it
      const created = pool;
      // A pool with no connections left is forgotten, so deleted databases leave nothing.
      created.on('remove', () => {
        if (created.totalCount === 0 && this.pools.get(key) === created) this.pools.delete(key);
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.end().catch(() => undefined)));
  }
}

async function withClient<T>(pools: SessionPools, t: SqlTarget, opts: SessionOptions, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pools.pool(t, opts).connect();
  } catch (err) {
    translate(err);
  }
  try {
    return await fn(client);
  } catch (err) {
    translate(err);
  } finally {
    await client
      .query('DISCARD ALL')
      .then(() => client.release())
      .catch(() => client.release(true));
  }
}

export class PostgresSql implements PostgresSqlEngine {
  private readonly pools = new SessionPools();

  /** Closes the console's pooled connections (service shutdown). */
  close(): Promise<void> {
    return this.pools.close();
  }

  async query(t: SqlTarget, sql: string, limits: ConsoleLimits): Promise<QueryResult> {
    return withClient(this.pools, t, { asApp: true, timeoutMs: limits.timeoutMs }, async (client) => {
      // The extended protocol runs exactly one statement (several are a syntax error)
      // and a portal lets us fetch only rowCap + 1 rows of a large result.
      const cursor = client.query(new Cursor(sql, [], { rowMode: 'array', types: consoleTypes }));
      const { rows, result } = await new Promise<{ rows: unknown[][]; result: pg.QueryResult }>((resolve, reject) =>
        cursor.read(limits.rowCap + 1, (err: Error | undefined, rows: unknown[][], result: pg.QueryResult) => (err ? reject(err) : resolve({ rows, result }))),
      );
      await cursor.close();
      const fields = result.fields ?? [];
      const truncated = rows.length > limits.rowCap;
      const kept = truncated ? rows.slice(0, limits.rowCap) : rows;
      let types: string[] = [];
      if (fields.length) {
        const { rows: named } = await client.query<{ t: string }>(
          'SELECT format_type(o, m) AS t FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY AS f(o, m, i) ORDER BY i',
          [fields.map((f) => f.dataTypeID), fields.map((f) => f.dataTypeModifier)],
        );
        types = named.map((r) => r.t);
      }
      return {
        command: result.command ?? '',
        columns: fields.map((f, i) => ({ name: f.name, type: types[i] ?? String(f.dataTypeID) })),
        rows: kept,
        row_count: fields.length ? kept.length : (result.rowCount ?? 0),
        truncated,
      };
    });
  }

  async schema(t: SqlTarget): Promise<TableSchema[]> {
    // pg_catalog rather than information_schema: the latter hides what the login role
    // holds no privilege on, and these queries run as pier_console itself (so they stay
    // out of the slow-query log, which shows the app's statements).
    return withClient(this.pools, t, { asApp: false }, async (client) => {
      const { rows: tables } = await client.query<{ oid: number; schema: string; name: string }>(`
        SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p')
          AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
        ORDER BY n.nspname, c.relname`);
      if (tables.length === 0) return [];
      const oids = tables.map((r) => r.oid);
      const { rows: columns } = await client.query<{ rel: number; name: string; type: string; nullable: boolean; default: string | null }>(
        `
        SELECT a.attrelid::int AS rel, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
               NOT a.attnotnull AS nullable, pg_get_expr(d.adbin, d.adrelid) AS default
        FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attrelid, a.attnum`,
        [oids],
      );
      const { rows: indexes } = await client.query<{ rel: number; name: string; unique: boolean; primary: boolean; definition: string; columns: string[] }>(
        `
        SELECT i.indrelid::int AS rel, c.relname AS name, i.indisunique AS unique, i.indisprimary AS primary,
               pg_get_indexdef(i.indexrelid) AS definition,
               ARRAY(SELECT pg_get_indexdef(i.indexrelid, k + 1, true) FROM generate_subscripts(i.indkey, 1) AS k ORDER BY k) AS columns
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = ANY($1::oid[])
        ORDER BY i.indrelid, c.relname`,
        [oids],
      );
      return tables.map((tbl) => {
        const own = indexes.filter((ix) => ix.rel === tbl.oid);
        return {
          schema: tbl.schema,
          name: tbl.name,
          columns: columns.filter((c) => c.rel === tbl.oid).map(({ name, type, nullable, default: def }) => ({ name, type, nullable, default: def })),
          primary_key: own.find((ix) => ix.primary)?.columns ?? [],
          indexes: own.map(({ name, columns: cols, unique, primary, definition }) => ({ name, columns: cols, unique, primary, definition })),
        };
      });
    });
  }

  async slowQueries(t: SqlTarget, limit: number): Promise<SlowQuery[]> {
    return withClient(this.pools, t, { asApp: false }, async (client) => {
      const { rows } = await client.query<{ query: string; calls: number; mean: number; max: number; total: number; rows: number }>(
        `
        SELECT query, calls, mean_exec_time AS mean, max_exec_time AS max, total_exec_time AS total, rows
        FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          -- The customer's statements: not the control plane's, not the bootstrap superuser's.
          AND userid NOT IN (SELECT oid FROM pg_roles WHERE rolname = current_user OR rolsuper)
        ORDER BY mean_exec_time DESC
        LIMIT $1`,
        [limit],
      );
      return rows.map((r) => ({ query: r.query, calls: r.calls, mean_time_ms: ms(r.mean), max_time_ms: ms(r.max), total_time_ms: ms(r.total), rows: r.rows }));
    });
  }

  async sealArchive(t: SqlTarget, timeoutMs: number): Promise<void> {
    await withClient(this.pools, t, { asApp: false }, async (client) => {
      // A transaction with an xid of its own writes a commit record: the one after the target.
      await client.query('SELECT txid_current()');
      // pg_walfile_name of the switch's end position names the segment just completed.
      const { rows } = await client.query<{ file: string }>('SELECT pg_walfile_name(pg_switch_wal()) AS file');
      const file = rows[0]!.file;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows: seen } = await client.query<{ last: string | null }>('SELECT last_archived_wal AS last FROM pg_stat_archiver');
        // Segment names of one timeline sort in WAL order; history files ("...history") after them.
        const last = seen[0]?.last;
        if (last && /^[0-9A-F]{24}$/.test(last) && last >= file) return;
        if (Date.now() > deadline) {
          throw new UnavailableError(`the WAL archive has not taken segment ${file} within ${Math.round(timeoutMs / 1000)} s`, 'backup_repository_unavailable');
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  }

  async resetSlowQueries(t: SqlTarget): Promise<void> {
    await withClient(this.pools, t, { asApp: false }, async (client) => {
      await client.query('SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)');
    });
  }
}
