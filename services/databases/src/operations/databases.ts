import { randomUUID } from 'node:crypto';
import { NotFoundError, ConflictError, isUuid, type Logger } from '@pier/kit';
import type { DatabaseCluster, ClusterDatabase } from '../cluster/port.ts';
import type { DatabasesStore, Page } from '../store/store.ts';
import { ShortIdTaken } from '../store/knex-store.ts';
import { shortIdOf, type AllowlistRule, type DatabaseRecord, type Engine } from '../domain/database.ts';
import { resolveProvision, resolveUpdate, touchesCluster, type ProvisionInput, type UpdateInput } from '../domain/rules.ts';
import { resync } from '../domain/status.ts';
import { connectionJson, type ExternalDomains } from '../domain/connection.ts';
import { normaliseCidr } from '../domain/cidr.ts';
import { mysqlHostOf } from '../domain/access.ts';
import type { ConsoleLimits, QueryResult, SlowQuery, SqlEngine, TableSchema } from '../sql/port.ts';

// The databases service's use cases: the domain's rules, the store and the cluster put
// together. Every change and its event commit in one transaction, and a cluster call
// that fails inside it rolls the change back, so a failed call leaves no trace.

export interface DatabasesDeps {
  store: DatabasesStore;
  cluster: DatabaseCluster;
  sql: Record<Engine, SqlEngine>;
  domains: ExternalDomains;
  console: ConsoleLimits;
  /** A database still not healthy this long after provisioning is in `error`. */
  provisionDeadlineMs: number;
  /** How often a database being created is checked, so `running` is published without a read. */
  watchIntervalMs: number;
  logger: Logger;
  /** Called after a commit that wrote events (pokes the outbox relay). */
  eventsWritten: () => void;
}

export class Databases {
  private readonly teardowns = new Map<string, Promise<void>>();
  private readonly watchers = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly d: DatabasesDeps) {}

  // ---------- reads, with live status ----------

  async list(vpcId: string, page: { limit: number; cursor?: string }): Promise<Page<DatabaseRecord>> {
    const result = await this.d.store.list(vpcId, page);
    const items = await this.resynced(vpcId, result.items);
    return { items: items.filter((db) => db.status !== 'deleted'), nextCursor: result.nextCursor };
  }

  async get(vpcId: string, id: string): Promise<DatabaseRecord> {
    const [db] = await this.resynced(vpcId, [await this.stored(vpcId, id)]);
    if (!db || db.status === 'deleted') throw notFound();
    return db;
  }

  private async stored(vpcId: string, id: string): Promise<DatabaseRecord> {
    const db = isUuid(id) ? await this.d.store.get(vpcId, id) : undefined;
    if (!db) throw notFound();
    return db;
  }

  /** Resyncs records with the cluster: one observe call for all of them. */
  private async resynced(vpcId: string, records: DatabaseRecord[]): Promise<DatabaseRecord[]> {
    if (records.length === 0) return records;
    const seen = await this.d.cluster.observe(vpcId, records.map((r) => r.id));
    const now = new Date();
    const changes = records.flatMap((r) => {
      const change = resync(r, seen.get(r.id) ?? { phase: 'absent' }, now, this.d.provisionDeadlineMs);
      return change ? [{ record: r, change }] : [];
    });
    for (const r of records) {
      if (r.status === 'deleting' && seen.get(r.id)?.phase !== 'absent') this.teardown(r);
    }
    if (changes.length === 0) return records;
    const updated = await this.d.store.transaction(async (tx) => {
      const out = new Map<string, DatabaseRecord>();
      for (const { record, change } of changes) {
        const next = await tx.setStatus(record.id, change.status, change.reason);
        await tx.event(statusEvent(next, record.status));
        out.set(record.id, next);
      }
      return out;
    });
    this.d.eventsWritten();
    return records.map((r) => updated.get(r.id) ?? r);
  }

  // ---------- lifecycle ----------

  async provision(workspaceId: string, vpcId: string, input: ProvisionInput): Promise<DatabaseRecord> {
    const spec = resolveProvision(input, this.d.cluster.capabilities);
    if (await this.d.store.nameTaken(vpcId, spec.name)) throw nameTaken();
    for (let attempt = 0; ; attempt++) {
      const id = randomUUID();
      const shortId = shortIdOf(id);
      const target: ClusterDatabase = { id, shortId, workspaceId, vpcId, ...spec, allowlist: [] };
      try {
        const db = await this.d.store.transaction(async (tx) => {
          const created = await tx.insert({ id, shortId, workspaceId, vpcId, ...spec, status: 'creating' });
          await tx.event(lifecycleEvent('database.created', created));
          // Inside the transaction: if the cluster refuses, nothing is committed.
          await this.applyOrUndo(target, true);
          return created;
        });
        this.d.eventsWritten();
        this.watch(db);
        return db;
      } catch (err) {
        if (err instanceof ShortIdTaken && attempt < 5) continue;
        throw err;
      }
    }
  }

  /** Applies to the cluster; on failure of a fresh create, removes what it left. */
  private async applyOrUndo(target: ClusterDatabase, fresh: boolean): Promise<void> {
    try {
      await this.d.cluster.apply(target);
    } catch (err) {
      if (fresh) {
        await this.d.cluster.delete(target).catch((e) => this.d.logger.warn({ err: String(e), id: target.id }, 'cleanup after a failed provision failed'));
      }
      throw err;
    }
  }

  async update(vpcId: string, id: string, input: UpdateInput): Promise<DatabaseRecord> {
    const current = await this.get(vpcId, id);
    const next = resolveUpdate(current, input);
    if (next.name !== current.name && (await this.d.store.nameTaken(vpcId, next.name, id))) throw nameTaken();
    const cluster = touchesCluster(current, next);
    if (cluster && next.externalAccessEnabled !== current.externalAccessEnabled && current.status === 'creating') {
      throw new ConflictError('external access can be changed once the database is running', 'database_not_running');
    }
    const updated = await this.d.store.transaction(async (tx) => {
      await tx.lock(id);
      const db = await tx.update(id, next);
      await tx.event(lifecycleEvent('database.updated', db));
      if (cluster) await this.d.cluster.apply(await this.clusterView(db, tx));
      return db;
    });
    this.d.eventsWritten();
    return updated;
  }

  async remove(vpcId: string, id: string): Promise<DatabaseRecord> {
    const current = await this.get(vpcId, id);
    if (current.status === 'deleting') return current;
    // Refuse before writing anything when the cluster is out of reach.
    await this.d.cluster.ping();
    const db = await this.d.store.transaction(async (tx) => {
      const next = await tx.setStatus(id, 'deleting', null);
      await tx.event(statusEvent(next, current.status));
      return next;
    });
    this.d.eventsWritten();
    this.teardown(db);
    return db;
  }

  /** Tears the database down in the background, then soft-deletes it. */
  private teardown(db: DatabaseRecord): void {
    if (this.stopped || this.teardowns.has(db.id)) return;
    const run = (async () => {
      try {
        await this.d.cluster.delete(db);
        await this.d.store.transaction(async (tx) => {
          const current = await tx.get(db.vpcId, db.id);
          if (current?.status !== 'deleting') return;
          const gone = await tx.setStatus(db.id, 'deleted', null);
          await tx.event(statusEvent(gone, 'deleting'));
        });
        this.d.eventsWritten();
      } catch (err) {
        // Left in `deleting`: the next read of the database starts the teardown again.
        this.d.logger.warn({ err: String(err), id: db.id }, 'database teardown failed; will retry on the next read');
      } finally {
        this.teardowns.delete(db.id);
      }
    })();
    this.teardowns.set(db.id, run);
  }

  /** Polls a database being created until it settles, so its `running` event is published promptly. */
  private watch(db: DatabaseRecord): void {
    if (this.stopped || this.watchers.has(db.id)) return;
    const tick = async () => {
      this.watchers.delete(db.id);
      if (this.stopped) return;
      try {
        const current = await this.d.store.get(db.vpcId, db.id);
        if (!current || current.status !== 'creating') return;
        const [next] = await this.resynced(db.vpcId, [current]);
        if (next?.status !== 'creating') return;
      } catch (err) {
        this.d.logger.debug({ err: String(err), id: db.id }, 'provisioning watch failed; retrying');
      }
      if (!this.stopped) this.watchers.set(db.id, setTimeout(tick, this.d.watchIntervalMs).unref());
    };
    this.watchers.set(db.id, setTimeout(tick, this.d.watchIntervalMs).unref());
  }

  /** After a restart: finish teardowns and keep watching creations a crash interrupted. */
  async recover(): Promise<void> {
    for (const db of await this.d.store.unsettled()) {
      if (db.status === 'deleting') this.teardown(db);
      else this.watch(db);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.watchers.values()) clearTimeout(t);
    this.watchers.clear();
    await Promise.allSettled([...this.teardowns.values()]);
  }

  async usage(vpcId: string): Promise<number> {
    return this.d.store.countLive(vpcId);
  }

  // ---------- connection ----------

  async connection(vpcId: string, id: string): Promise<Record<string, unknown>> {
    const db = await this.get(vpcId, id);
    if (db.status === 'deleting') throw new ConflictError('database is being deleted', 'database_deleting');
    const { endpoints, credentials } = await this.d.cluster.connection(await this.clusterView(db));
    return connectionJson({ engine: db.engine, shortId: db.shortId, externalAccessEnabled: db.externalAccessEnabled, endpoints, credentials, domains: this.d.domains });
  }

  private async clusterView(db: DatabaseRecord, store: DatabasesStore = this.d.store): Promise<ClusterDatabase> {
    const rules = await store.rules(db.id);
    return {
      id: db.id,
      shortId: db.shortId,
      workspaceId: db.workspaceId,
      vpcId: db.vpcId,
      engine: db.engine,
      version: db.version,
      instanceType: db.instanceType,
      storageGb: db.storageGb,
      replicas: db.replicas,
      externalAccessEnabled: db.externalAccessEnabled,
      allowlist: rules.map((r) => r.cidr),
    };
  }

  // ---------- IP allowlist ----------

  async rules(vpcId: string, id: string): Promise<AllowlistRule[]> {
    const db = await this.stored(vpcId, id);
    return this.d.store.rules(db.id);
  }

  async addRule(vpcId: string, id: string, cidrInput: string, description: string): Promise<AllowlistRule> {
    const db = await this.get(vpcId, id);
    if (db.status === 'deleting') throw new ConflictError('database is being deleted', 'database_deleting');
    const cidr = normaliseCidr(cidrInput);
    if (db.engine === 'mysql') mysqlHostOf(cidr); // throws for what MySQL accounts cannot express
    const rule = await this.d.store.transaction(async (tx) => {
      await tx.lock(db.id);
      const added = await tx.addRule(db.id, cidr, description);
      await tx.event({ kind: 'database.allowlist_rule_added', workspaceId: db.workspaceId, vpcId: db.vpcId, resourceId: db.id, data: { rule_id: added.id, cidr } });
      await this.d.cluster.apply(await this.clusterView(db, tx));
      return added;
    });
    this.d.eventsWritten();
    return rule;
  }

  async removeRule(vpcId: string, id: string, ruleId: string): Promise<void> {
    const db = await this.get(vpcId, id);
    if (db.status === 'deleting') throw new ConflictError('database is being deleted', 'database_deleting');
    if (!isUuid(ruleId)) throw ruleNotFound();
    await this.d.store.transaction(async (tx) => {
      await tx.lock(db.id);
      if (!(await tx.removeRule(db.id, ruleId))) throw ruleNotFound();
      await tx.event({ kind: 'database.allowlist_rule_removed', workspaceId: db.workspaceId, vpcId: db.vpcId, resourceId: db.id, data: { rule_id: ruleId } });
      await this.d.cluster.apply(await this.clusterView(db, tx));
    });
    this.d.eventsWritten();
  }

  // ---------- SQL: console, schema, slow queries ----------

  private async running(vpcId: string, id: string): Promise<DatabaseRecord> {
    const db = await this.get(vpcId, id);
    if (db.status !== 'running') {
      throw new ConflictError(`database is ${db.status}; this needs it running`, 'database_not_running');
    }
    return db;
  }

  async query(vpcId: string, id: string, sql: string): Promise<QueryResult> {
    const db = await this.running(vpcId, id);
    return this.d.sql[db.engine].query(await this.d.cluster.sqlTarget(db), sql, this.d.console);
  }

  async schema(vpcId: string, id: string): Promise<TableSchema[]> {
    const db = await this.running(vpcId, id);
    return this.d.sql[db.engine].schema(await this.d.cluster.sqlTarget(db));
  }

  async slowQueries(vpcId: string, id: string, limit: number): Promise<SlowQuery[]> {
    const db = await this.running(vpcId, id);
    return this.d.sql[db.engine].slowQueries(await this.d.cluster.sqlTarget(db), limit);
  }

  async resetSlowQueries(vpcId: string, id: string): Promise<void> {
    const db = await this.running(vpcId, id);
    await this.d.sql[db.engine].resetSlowQueries(await this.d.cluster.sqlTarget(db));
  }
}

const notFound = () => new NotFoundError('database not found', 'database_not_found');
const ruleNotFound = () => new NotFoundError('allowlist rule not found', 'allowlist_rule_not_found');
const nameTaken = () => new ConflictError('a database with this name already exists in the VPC', 'already_exists');

function lifecycleEvent(kind: string, db: DatabaseRecord) {
  return {
    kind,
    workspaceId: db.workspaceId,
    vpcId: db.vpcId,
    resourceId: db.id,
    data: { name: db.name, engine: db.engine, status: db.status, instance_type: db.instanceType, storage_gb: db.storageGb, external_access_enabled: db.externalAccessEnabled },
  };
}

function statusEvent(db: DatabaseRecord, previous: string) {
  return {
    kind: 'database.status_changed',
    workspaceId: db.workspaceId,
    vpcId: db.vpcId,
    resourceId: db.id,
    data: { name: db.name, status: db.status, previous_status: previous, reason: db.statusReason },
  };
}
