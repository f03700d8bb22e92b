import mysql from 'mysql2';
import { InputError, UnavailableError } from '@pier/kit';
import type { SqlTarget } from '../domain/cluster-port.ts';
import type { ConsoleLimits, IndexSchema, QueryResult, SlowQuery, SqlEngine, TableSchema } from '../domain/sql-port.ts';

// MySQL-protocol side (MariaDB on docker, MySQL under MOCO on kubernetes) of the
// console, schema inspector and slow-query log. Console statements log in as the
// database's own account (the app user), so they can do what the customer's app can and
// nothing of the control plane's login; the schema inspector and slow-query log log in
// as `pier_console`, which holds the app user's grants and reads performance_schema.

const BINARY_CHARSET = 63;

const TYPE_NAMES: Record<number, string> = {
  0x00: 'decimal',
  0x01: 'tinyint',
  0x02: 'smallint',
  0x03: 'int',
  0x04: 'float',
  0x05: 'double',
  0x06: 'null',
  0x07: 'timestamp',
  0x08: 'bigint',
  0x09: 'mediumint',
  0x0a: 'date',
  0x0b: 'time',
  0x0c: 'datetime',
  0x0d: 'year',
  0x0e: 'date',
  0x0f: 'varchar',
  0x10: 'bit',
  0xf5: 'json',
  0xf6: 'decimal',
  0xf7: 'enum',
  0xf8: 'set',
  0xf9: 'tinytext',
  0xfa: 'mediumtext',
  0xfb: 'longtext',
  0xfc: 'text',
  0xfd: 'varchar',
  0xfe: 'char',
  0xff: 'geometry',
};
const BINARY_NAMES: Record<number, string> = { 0xf9: 'tinyblob', 0xfa: 'mediumblob', 0xfb: 'longblob', 0xfc: 'blob', 0xfd: 'varbinary', 0xfe: 'binary' };

interface Field {
  name: string;
  columnType: number;
  characterSet: number;
}

function typeName(f: Field): string {
  if (f.characterSet === BINARY_CHARSET && BINARY_NAMES[f.columnType]) return BINARY_NAMES[f.columnType]!;
  return TYPE_NAMES[f.columnType] ?? `type ${f.columnType}`;
}

type CastField = { type: string; string(): string | null; buffer(): Buffer | null; charset?: number; characterSet?: number };

/** Numbers typed, binary as hex, everything else as the server prints it. */
function typeCast(field: CastField, next: () => unknown): unknown {
  switch (field.type) {
    case 'TINY':
    case 'SHORT':
    case 'LONG':
    case 'INT24':
    case 'YEAR':
    case 'FLOAT':
    case 'DOUBLE': {
      const s = field.string();
      return s === null ? null : Number(s);
    }
    case 'LONGLONG': {
      const s = field.string();
      return s === null ? null : Number.isSafeInteger(Number(s)) ? Number(s) : s;
    }
    case 'JSON': {
      const s = field.string();
      return s === null ? null : JSON.parse(s);
    }
    case 'BLOB':
    case 'TINY_BLOB':
    case 'MEDIUM_BLOB':
    case 'LONG_BLOB':
    case 'VAR_STRING':
    case 'STRING':
    case 'BIT':
    case 'GEOMETRY': {
      const binary = (field.characterSet ?? field.charset) === BINARY_CHARSET || field.type === 'BIT' || field.type === 'GEOMETRY';
      if (!binary) return field.string();
      const b = field.buffer();
      return b === null ? null : `\\x${b.toString('hex')}`;
    }
    default:
      return field.string() ?? next();
  }
}

function translate(err: unknown): never {
  const e = err as { code?: string; fatal?: boolean; sqlState?: string; sqlMessage?: string; message?: string; errno?: number };
  if (e?.sqlState && !e.fatal) throw new InputError(e.sqlMessage ?? e.message ?? 'SQL error', 'sql_error', { sqlstate: e.sqlState });
  if (e?.fatal || e?.code) throw new UnavailableError(`cannot reach the database: ${e.message}`, 'database_unavailable');
  throw err;
}

function open(t: SqlTarget, asApp: boolean): Promise<mysql.Connection> {
  const login = asApp ? t.app : { user: t.user, password: t.password, open: undefined };
  return new Promise((resolve, reject) => {
    const conn = mysql.createConnection({
      host: t.host,
      port: t.port,
      user: login.user,
      password: login.password,
      ...(login.open ? { stream: login.open } : {}),
      connectTimeout: 5000,
      multipleStatements: false,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      // typeCast receives mysql2's field wrapper; its public typings are narrower.
      typeCast: typeCast as unknown as mysql.TypeCast,
    });
    conn.on('error', () => undefined);
    conn.connect((err) => (err ? (conn.destroy(), reject(err)) : resolve(conn)));
  });
}

function run<T = unknown>(conn: mysql.Connection, sql: string, values: unknown[] = []): Promise<T> {
  return new Promise((resolve, reject) => conn.query(sql, values, (err, rows) => (err ? reject(err) : resolve(rows as T))));
}

/** `asApp`: log in as the database's own account (console statements), else as pier_console. */
async function withConnection<T>(t: SqlTarget, asApp: boolean, fn: (c: mysql.Connection) => Promise<T>): Promise<T> {
  let conn: mysql.Connection | undefined;
  try {
    conn = await open(t, asApp);
    return await fn(conn);
  } catch (err) {
    return translate(err);
  } finally {
    conn?.destroy();
  }
}

/** MariaDB names the statement timeout max_statement_time (s), MySQL max_execution_time (ms). */
async function setTimeout(conn: mysql.Connection, timeoutMs: number): Promise<void> {
  try {
    await run(conn, `SET SESSION max_statement_time = ${timeoutMs / 1000}`);
  } catch {
    await run(conn, `SET SESSION max_execution_time = ${Math.round(timeoutMs)}`);
  }
}

const ident = (s: string) => `\`${s.replace(/`/g, '``')}\``;

export class MysqlSql implements SqlEngine {
  async query(t: SqlTarget, sql: string, limits: ConsoleLimits): Promise<QueryResult> {
    return withConnection(t, true, async (conn) => {
      // Session settings run before a default database is chosen, so they do not show
      // up among the database's slow queries.
      await setTimeout(conn, limits.timeoutMs);
      await run(conn, `USE ${ident(t.database)}`);
      return new Promise<QueryResult>((resolve, reject) => {
        const rows: unknown[][] = [];
        let fields: Field[] = [];
        let okPacket: { affectedRows?: number } | undefined;
        let truncated = false;
        let settled = false;
        const finish = () => {
          if (settled) return;
          settled = true;
          resolve({
            command: (sql.trim().split(/\s+/)[0] ?? '').toUpperCase(),
            columns: fields.map((f) => ({ name: f.name, type: typeName(f) })),
            rows,
            row_count: fields.length ? rows.length : (okPacket?.affectedRows ?? 0),
            truncated,
          });
        };
        const q = conn.query({ sql, rowsAsArray: true });
        q.on('fields', (f: Field[]) => {
          if (fields.length === 0) fields = f ?? [];
        });
        q.on('result', (row: unknown) => {
          if (!Array.isArray(row)) {
            okPacket = row as { affectedRows?: number };
            return;
          }
          if (rows.length < limits.rowCap) {
            rows.push(row);
            return;
          }
          // Past the cap: drop the connection rather than read the rest of the result.
          truncated = true;
          conn.destroy();
          finish();
        });
        q.on('error', (err: unknown) => {
          if (settled) return;
          settled = true;
          reject(err);
        });
        q.on('end', finish);
      });
    });
  }

  async schema(t: SqlTarget): Promise<TableSchema[]> {
    return withConnection(t, false, async (conn) => {
      const tables = await run<{ name: string }[]>(
        conn,
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
        [t.database],
      );
      const columns = await run<{ tbl: string; name: string; type: string; nullable: string; def: string | null }[]>(
        conn,
        `SELECT TABLE_NAME AS tbl, COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLUMN_DEFAULT AS def
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
        [t.database],
      );
      const stats = await run<{ tbl: string; name: string; non_unique: number; col: string }[]>(
        conn,
        `SELECT TABLE_NAME AS tbl, INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS col
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
        [t.database],
      );
      return tables.map(({ name }) => {
        const indexes = new Map<string, IndexSchema>();
        for (const s of stats.filter((x) => x.tbl === name)) {
          const primary = s.name === 'PRIMARY';
          const ix = indexes.get(s.name) ?? { name: s.name, columns: [], unique: Number(s.non_unique) === 0, primary, definition: '' };
          ix.columns.push(s.col);
          indexes.set(s.name, ix);
        }
        for (const ix of indexes.values()) {
          const cols = ix.columns.map(ident).join(', ');
          ix.definition = ix.primary ? `PRIMARY KEY (${cols})` : `CREATE ${ix.unique ? 'UNIQUE ' : ''}INDEX ${ident(ix.name)} ON ${ident(name)} (${cols})`;
        }
        return {
          schema: t.database,
          name,
          columns: columns
            .filter((c) => c.tbl === name)
            // MariaDB reports an explicit DEFAULT NULL as the text NULL: both mean none.
            .map((c) => ({ name: c.name, type: c.type, nullable: c.nullable === 'YES', default: c.def === 'NULL' ? null : c.def })),
          primary_key: indexes.get('PRIMARY')?.columns ?? [],
          indexes: [...indexes.values()],
        };
      });
    });
  }

  async slowQueries(t: SqlTarget, limit: number): Promise<SlowQuery[]> {
    return withConnection(t, false, async (conn) => {
      // Timer columns are picoseconds.
      const rows = await run<{ query: string; calls: number; mean: number; max: number; total: number; rows: number }[]>(
        conn,
        `SELECT DIGEST_TEXT AS query, COUNT_STAR AS calls, AVG_TIMER_WAIT / 1e9 AS mean, MAX_TIMER_WAIT / 1e9 AS max,
                SUM_TIMER_WAIT / 1e9 AS total, SUM_ROWS_SENT + SUM_ROWS_AFFECTED AS \`rows\`
         FROM performance_schema.events_statements_summary_by_digest
         WHERE SCHEMA_NAME = ? AND DIGEST_TEXT IS NOT NULL
         ORDER BY AVG_TIMER_WAIT DESC LIMIT ?`,
        [t.database, limit],
      );
      const n = (v: unknown) => Math.round(Number(v) * 1000) / 1000;
      return rows.map((r) => ({
        query: String(r.query).trim(),
        calls: Number(r.calls),
        mean_time_ms: n(r.mean),
        max_time_ms: n(r.max),
        total_time_ms: n(r.total),
        rows: Number(r.rows),
      }));
    });
  }

  async resetSlowQueries(t: SqlTarget): Promise<void> {
    await withConnection(t, false, async (conn) => {
      // The digest table is server-wide: a managed server holds one customer database.
      await run(conn, 'TRUNCATE TABLE performance_schema.events_statements_summary_by_digest');
    });
  }
}
