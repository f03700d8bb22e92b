// The SQL the control plane speaks to a managed database: the console, the schema
// inspector and the slow-query log. The domain defines it; sql/postgres.ts and
// sql/mysql.ts implement it, one per engine.
import type { SqlTarget } from './cluster-port.ts';

export interface ConsoleLimits {
  /** Statement timeout, ms. */
  timeoutMs: number;
  /** Rows returned at most; the rest of the result is not fetched. */
  rowCap: number;
}

export interface QueryResult {
  command: string;
  columns: { name: string; type: string }[];
  rows: unknown[][];
  /** Rows returned, or rows affected by a statement that returns none. */
  row_count: number;
  truncated: boolean;
}

export interface ColumnSchema {
  name: string;
  type: string;
  nullable: boolean;
  default: string | null;
}

export interface IndexSchema {
  name: string;
  columns: string[];
  unique: boolean;
  primary: boolean;
  definition: string;
}

export interface TableSchema {
  schema: string;
  name: string;
  columns: ColumnSchema[];
  primary_key: string[];
  indexes: IndexSchema[];
}

export interface SlowQuery {
  query: string;
  calls: number;
  mean_time_ms: number;
  max_time_ms: number;
  total_time_ms: number;
  rows: number;
}

export interface SqlEngine {
  query(target: SqlTarget, sql: string, limits: ConsoleLimits): Promise<QueryResult>;
  schema(target: SqlTarget): Promise<TableSchema[]>;
  slowQueries(target: SqlTarget, limit: number): Promise<SlowQuery[]>;
  resetSlowQueries(target: SqlTarget): Promise<void>;
}

/** postgresql's SQL also serves point-in-time recovery (mysql has none here). */
export interface PostgresSqlEngine extends SqlEngine {
  /**
   * Makes every instant until now recoverable from the database's archive: a commit after
   * it (recovery to a time stops at the first commit past the target, and fails without
   * one), then the WAL segment holding it switched out and waited for until archived.
   * UnavailableError when the archive does not take the segment within `timeoutMs`.
   */
  sealArchive(target: SqlTarget, timeoutMs: number): Promise<void>;
}
