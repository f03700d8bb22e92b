// What every use case works with, built once in server.ts (no globals), and the small
// lookups they share.
import { ConflictError, UnavailableError, isUuid, type KeyedMutex, type Logger } from '@pier/kit';
import type { ClusterDatabase, ClusterRef, DatabaseCluster } from './cluster-port.ts';
import type { ConsoleLimits, PostgresSqlEngine, SqlEngine } from './sql-port.ts';
import type { DatabasesStore } from './store-port.ts';
import type { VpcDirectory } from './vpc-directory.ts';
import type { DatabaseRecord, PendingChange } from './database.ts';
import { databaseDeleting, databaseNotFound } from './errors.ts';

export interface Scope {
  workspaceId: string;
  vpcId: string;
}

/** External host names are `<short_id>.<domain>`, per engine. */
/** `<short_id>.<domain>` names for external access, per engine; unset means addresses the cluster gives. */
export interface ExternalDomains {
  postgresql?: string;
  mysql?: string;
}

export interface Deadlines {
  /** A database still not healthy this long after provisioning is in `error`. */
  provisionMs: number;
  /** A deleted database's backups (and archive) are kept this long, then purged. */
  deletedBackupsMs: number;
}

export interface DatabasesContext {
  store: DatabasesStore;
  cluster: DatabaseCluster;
  sql: { postgresql: PostgresSqlEngine; mysql: SqlEngine };
  vpcs: VpcDirectory;
  domains: ExternalDomains;
  console: ConsoleLimits;
  log: Logger;
  /** One change at a time per database in this process, without holding a row lock over a cluster call. */
  locks: KeyedMutex;
  /** Called after a commit that wrote events, so the relay publishes them now rather than at its next pass. */
  eventsWritten(): void;
  now(): Date;
  deadlines: Deadlines;
}

export function refOf(db: DatabaseRecord): ClusterRef {
  return { id: db.id, shortId: db.shortId, vpcId: db.vpcId, engine: db.engine };
}

/** What the cluster should run for `db`, with `change` (a pending PATCH) applied when given. */
export function clusterView(db: DatabaseRecord, allowlist: string[], change: PendingChange | null = null): ClusterDatabase {
  const source = db.restoreSource;
  return {
    id: db.id,
    shortId: db.shortId,
    workspaceId: db.workspaceId,
    vpcId: db.vpcId,
    engine: db.engine,
    version: db.version,
    instanceType: change?.instanceType ?? db.instanceType,
    storageGb: change?.storageGb ?? db.storageGb,
    // A pending change written before replicas could change carries none.
    replicas: change?.replicas ?? db.replicas,
    externalAccessEnabled: change?.externalAccessEnabled ?? db.externalAccessEnabled,
    allowlist,
    restore: source && {
      source: { id: source.databaseId, shortId: source.shortId, vpcId: source.vpcId, engine: source.engine },
      backupName: source.backupName,
      backupRef: source.backupRef,
      targetTime: source.targetTime ? new Date(source.targetTime) : null,
    },
  };
}

/**
 * The allowlist in force as recorded: `active` rules. An `adding` rule joins only in the
 * request that adds it, and a `removing` one is what its request takes away; any other
 * pending rule is a crash's leftover that the reconciler undoes or finishes.
 */
export async function activeCidrs(ctx: Pick<DatabasesContext, 'store'>, databaseId: string): Promise<string[]> {
  return (await ctx.store.rules(databaseId, ['active'])).map((r) => r.cidr);
}

/** A database of this VPC that clients may see (provisioned, not deleted), else a 404. */
export async function findDatabase(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  const db = isUuid(id) ? await ctx.store.get(scope.vpcId, id.toLowerCase()) : undefined;
  if (!db || db.workspaceId !== scope.workspaceId) throw databaseNotFound();
  return db;
}

/**
 * A database whose backups may be listed and restored: one clients see, or one deleted
 * less than the retention ago (so an accidental delete can be undone by a restore).
 */
export async function findWithBackups(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  try {
    return await findDatabase(ctx, scope, id);
  } catch (err) {
    const since = new Date(ctx.now().getTime() - ctx.deadlines.deletedBackupsMs);
    const deleted = isUuid(id) ? await ctx.store.deletedSince(scope.vpcId, id.toLowerCase(), since) : undefined;
    if (!deleted || deleted.workspaceId !== scope.workspaceId) throw err;
    return deleted;
  }
}

/** A database that can still be changed: 404 when unknown, 409 while it is being deleted. */
export async function findMutable(ctx: DatabasesContext, scope: Scope, id: string): Promise<DatabaseRecord> {
  const db = await findDatabase(ctx, scope, id);
  if (db.status === 'deleting') throw databaseDeleting();
  return db;
}

export function requireRunning(db: DatabaseRecord): DatabaseRecord {
  if (db.status !== 'running') throw new ConflictError(`database is ${db.status}; this needs it running`, 'database_not_running');
  return db;
}

/**
 * After a cluster call that failed: one that answered but failed part way may hold some of
 * the change, so the recorded state is applied again (best effort). An unreachable
 * cluster got nothing to undo.
 */
export async function convergeBack(ctx: DatabasesContext, db: DatabaseRecord, allowlist: string[], err: unknown): Promise<void> {
  if (err instanceof UnavailableError) return;
  await ctx.cluster
    .apply(clusterView(db, allowlist))
    .catch((e) => ctx.log.warn({ err: String(e), id: db.id }, 'could not converge the cluster back after a failed change'));
}
