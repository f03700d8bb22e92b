// The JSON the databases API answers with, shaped from the domain's records. The
// connection's external endpoints follow the spec's URL shapes and are given only with
// external access on.
import type { AllowlistRule, DatabaseRecord, Engine } from '../domain/database.ts';
import type { BackupRecord, BackupSchedule, RecoveryWindow } from '../domain/backup-records.ts';
import type { Credentials } from '../domain/cluster-port.ts';
import type { ConnectionDetails } from '../domain/connection.ts';
import type { EngineOffer } from '../domain/engines.ts';

export function databaseJson(db: DatabaseRecord): Record<string, unknown> {
  return {
    id: db.id,
    short_id: db.shortId,
    workspace_id: db.workspaceId,
    vpc_id: db.vpcId,
    name: db.name,
    engine: db.engine,
    instance_type: db.instanceType,
    storage_gb: db.storageGb,
    postgres_version: db.engine === 'postgresql' ? db.version : null,
    mysql_version: db.engine === 'mysql' ? db.version : null,
    replicas: db.replicas,
    external_access_enabled: db.externalAccessEnabled,
    status: db.status,
    status_reason: db.status === 'error' ? db.statusReason : null,
    source: db.restoreSource && {
      kind: db.restoreSource.kind,
      database_id: db.restoreSource.databaseId,
      backup_name: db.restoreSource.backupName,
      target_time: db.restoreSource.targetTime,
    },
    created_at: db.createdAt.toISOString(),
    updated_at: db.updatedAt.toISOString(),
  };
}

export function backupJson(b: BackupRecord): Record<string, unknown> {
  return {
    name: b.name,
    database_id: b.databaseId,
    status: b.status,
    method: b.method,
    size_bytes: b.sizeBytes,
    started_at: b.startedAt.toISOString(),
    completed_at: b.completedAt?.toISOString() ?? null,
    error: b.error,
  };
}

export function windowJson(w: RecoveryWindow | null): Record<string, unknown> | null {
  return w && { earliest: w.earliest.toISOString(), latest: w.latest.toISOString() };
}

export function scheduleJson(s: BackupSchedule): Record<string, unknown> {
  return { schedule: s.schedule, retention_count: s.retentionCount, enabled: s.enabled, next_run_at: s.nextRunAt?.toISOString() ?? null };
}

export function ruleJson(rule: AllowlistRule): Record<string, unknown> {
  return {
    id: rule.id,
    database_id: rule.databaseId,
    cidr: rule.cidr,
    description: rule.description,
    created_at: rule.createdAt.toISOString(),
  };
}

const SCHEME: Record<Engine, string> = { postgresql: 'postgresql', mysql: 'mysql' };

function url(engine: Engine, c: Credentials, host: string, port: number, database: string): string {
  return `${SCHEME[engine]}://${encodeURIComponent(c.username)}:${encodeURIComponent(c.password)}@${host}:${port}/${database}`;
}

export function connectionJson(i: ConnectionDetails): Record<string, unknown> {
  const { engine, shortId: db, endpoints: e, credentials: c } = i;
  const out: Record<string, unknown> = {
    engine,
    host: e.host,
    port: e.port,
    database: db,
    username: c.username,
    password: c.password,
    database_url: url(engine, c, e.host, e.port, db),
    read_only_host: e.readOnlyHost,
    read_only_url: url(engine, c, e.readOnlyHost, e.port, db),
  };
  if (engine === 'postgresql') {
    out.pooler_host = e.poolerHost ?? null;
    out.pooler_host_ro = e.poolerHostRo ?? null;
  }
  const x = i.external;
  out.external_host = x ? x.host : null;
  out.external_host_ro = x ? x.hostRo : null;
  out.external_port = x ? x.port : null;
  out.external_port_ro = x ? x.portRo : null;
  out.external_url = x ? url(engine, c, x.host, x.port, db) : null;
  out.external_url_ro = x ? url(engine, c, x.hostRo, x.portRo, db) : null;
  return out;
}

export function engineJson(e: EngineOffer): Record<string, unknown> {
  return {
    engine: e.engine,
    server: e.server,
    versions: e.versions,
    default_version: e.defaultVersion,
    instance_types: e.instanceTypes,
    default_instance_type: e.defaultInstanceType,
    replicas: { min: e.replicas.min, max: e.replicas.max, default: e.replicas.default, odd_only: e.replicas.oddOnly, shrinks: e.replicas.shrinks },
    storage_gb: e.storageGb,
  };
}
