import { z } from 'zod';
import { ENGINES, STATUSES } from '../domain/database.ts';
import { BACKUP_METHODS, BACKUP_STATUSES, RETENTION_COUNT } from '../domain/backup-records.ts';
import { INSTANCE_TYPE_NAMES, listOf, vpcPathParams } from '@pier/kit';

// Request and response contracts of the databases API. The same schemas validate
// requests and produce the OpenAPI document (/internal/openapi).

export const databaseParams = vpcPathParams.extend({ databaseID: z.string() });
export const ruleParams = databaseParams.extend({ ruleID: z.string() });
export const backupParams = databaseParams.extend({ backupName: z.string() });

/** Versions are strings ("15", "10.11"); a bare number is taken as its text. */
const version = z.union([z.string().min(1).max(20), z.number()]).transform(String);

export const provisionBody = z.strictObject({
  name: z.string().optional(),
  engine: z.enum(ENGINES).optional(),
  instance_type: z.enum(INSTANCE_TYPE_NAMES).optional(),
  storage_gb: z.number().int().optional(),
  postgres_version: version.optional(),
  mysql_version: version.optional(),
  replicas: z.number().int().min(0).optional(),
  external_access_enabled: z.boolean().optional(),
});

export const updateBody = z.strictObject({
  name: z.string().optional(),
  instance_type: z.enum(INSTANCE_TYPE_NAMES).optional(),
  storage_gb: z.number().int().optional(),
  external_access_enabled: z.boolean().optional(),
});

// Backups, restore, fork, replicas. Unknown fields are refused; the domain checks the
// values (each error names its field).
export const takeBackupBody = z.strictObject({});

export const restoreBody = z.strictObject({
  name: z.string({ error: 'is required: the name of the new database' }),
  backup_name: z.string().min(1).max(100).optional(),
  target_time: z.string().max(64).optional().describe('postgresql: recover to this instant (ISO 8601 with a zone)'),
});

export const scheduleBody = z.strictObject({
  schedule: z.string().max(200).optional().describe('5-field cron, UTC'),
  retention_count: z.number().int().optional().describe(`completed scheduled backups kept, ${RETENTION_COUNT.min}-${RETENTION_COUNT.max}`),
  enabled: z.boolean().optional(),
});

export const forkBody = z.strictObject({
  name: z.string({ error: 'is required: the name of the new database' }),
  target_vpc_id: z.string().max(100).optional().describe("a VPC of the same workspace (default: the source's)"),
});

export const replicasBody = z.strictObject({
  replicas: z.number({ error: 'is required: an integer' }).int(),
});

export const ruleBody = z.strictObject({
  cidr: z.string({ error: 'is required (a CIDR block such as 203.0.113.0/24 or 2001:db8::/48)' }),
  description: z.string().max(200).optional(),
});

export const QUERY_MAX_CHARS = 100_000;
export const queryBody = z.strictObject({
  sql: z.string().trim().min(1, 'is required: one SQL statement').max(QUERY_MAX_CHARS),
});

export const SLOW_QUERIES_LIMIT = { default: 20, max: 100 } as const;
export const slowQueriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(SLOW_QUERIES_LIMIT.max).default(SLOW_QUERIES_LIMIT.default),
});

// ---------- responses ----------

export const database = z.object({
  id: z.string(),
  short_id: z.string(),
  workspace_id: z.string(),
  vpc_id: z.string(),
  name: z.string(),
  engine: z.enum(ENGINES),
  instance_type: z.enum(INSTANCE_TYPE_NAMES),
  storage_gb: z.number().int(),
  postgres_version: z.string().nullable(),
  mysql_version: z.string().nullable(),
  replicas: z.number().int(),
  external_access_enabled: z.boolean(),
  status: z.enum(STATUSES),
  status_reason: z.string().nullable(),
  source: z
    .object({ kind: z.enum(['restore', 'fork']), database_id: z.string(), backup_name: z.string(), target_time: z.string().nullable() })
    .nullable()
    .describe('what a database made from a backup (restore, fork) was made from'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const backup = z.object({
  name: z.string(),
  database_id: z.string(),
  status: z.enum(BACKUP_STATUSES),
  method: z.enum(BACKUP_METHODS),
  size_bytes: z.number().int().nullable().describe('bytes stored in the backup repository (compressed)'),
  started_at: z.string(),
  completed_at: z.string().nullable(),
  error: z.string().nullable(),
});

export const backupList = z.object({
  items: z.array(backup),
  next_cursor: z.string().nullable(),
  recovery_window: z
    .object({ earliest: z.string(), latest: z.string() })
    .nullable()
    .describe('postgresql: the span target_time may take; null for mysql or while nothing is recoverable'),
});

export const schedule = z.object({
  schedule: z.string(),
  retention_count: z.number().int(),
  enabled: z.boolean(),
  next_run_at: z.string().nullable(),
});

export const databaseList = listOf(database);

export const connection = z.object({
  engine: z.enum(ENGINES),
  host: z.string(),
  port: z.number().int(),
  database: z.string(),
  username: z.string(),
  password: z.string(),
  database_url: z.string(),
  read_only_host: z.string(),
  read_only_url: z.string(),
  pooler_host: z.string().nullable().optional(),
  pooler_host_ro: z.string().nullable().optional(),
  external_host: z.string().nullable(),
  external_host_ro: z.string().nullable(),
  external_port: z.number().int().nullable(),
  external_port_ro: z.number().int().nullable().describe("external_host_ro's port: replica 1's on docker, else external_port"),
  external_url: z.string().nullable(),
  external_url_ro: z.string().nullable(),
});

export const rule = z.object({ id: z.string(), database_id: z.string(), cidr: z.string(), description: z.string(), created_at: z.string() });
export const ruleList = listOf(rule);

export const queryResult = z.object({
  command: z.string(),
  columns: z.array(z.object({ name: z.string(), type: z.string() })),
  rows: z.array(z.array(z.unknown())),
  row_count: z.number().int(),
  truncated: z.boolean(),
});

export const schemaResult = z.object({
  tables: z.array(
    z.object({
      schema: z.string(),
      name: z.string(),
      columns: z.array(z.object({ name: z.string(), type: z.string(), nullable: z.boolean(), default: z.string().nullable() })),
      primary_key: z.array(z.string()),
      indexes: z.array(z.object({ name: z.string(), columns: z.array(z.string()), unique: z.boolean(), primary: z.boolean(), definition: z.string() })),
    }),
  ),
});

export const slowQueries = z.object({
  items: z.array(
    z.object({ query: z.string(), calls: z.number(), mean_time_ms: z.number(), max_time_ms: z.number(), total_time_ms: z.number(), rows: z.number() }),
  ),
});

export const engineList = z.object({
  adapter: z.enum(['docker', 'kubernetes']).describe('the cluster adapter this installation runs databases on'),
  items: z.array(
    z.object({
      engine: z.enum(ENGINES),
      server: z.string().describe('the server that runs: PostgreSQL, MySQL, or MariaDB for mysql on docker'),
      versions: z.array(z.string()).describe('accepted values of postgres_version / mysql_version'),
      default_version: z.string(),
      instance_types: z.array(z.enum(INSTANCE_TYPE_NAMES)).describe('accepted values of instance_type (mysql: every one but svc.nano)'),
      default_instance_type: z.enum(INSTANCE_TYPE_NAMES),
      replicas: z
        .object({ min: z.number().int(), max: z.number().int(), default: z.number().int(), odd_only: z.boolean(), shrinks: z.boolean() })
        .describe('bounds of replicas: postgresql read replicas, mysql instances; shrinks: whether a running count may go down'),
      storage_gb: z
        .object({ min: z.number().int(), max: z.number().int(), default: z.number().int(), enforced: z.boolean() })
        .describe('bounds of storage_gb; enforced: whether it becomes a real size limit on this cluster'),
    }),
  ),
});
