// The events the databases service publishes, written through the outbox in the
// transaction of the change they describe. Subjects:
// pier.events.<workspace>.<vpc>.<kind>.<database id>. Never a password.
import type { PierEvent } from '@pier/kit';
import type { AllowlistRule, DatabaseRecord, DatabaseStatus } from './database.ts';

function event(db: DatabaseRecord, kind: string, data: Record<string, unknown>): PierEvent {
  return { kind, workspaceId: db.workspaceId, vpcId: db.vpcId, resourceId: db.id, data };
}

function lifecycle(kind: string, db: DatabaseRecord): PierEvent {
  return event(db, kind, {
    name: db.name,
    engine: db.engine,
    status: db.status,
    instance_type: db.instanceType,
    storage_gb: db.storageGb,
    external_access_enabled: db.externalAccessEnabled,
  });
}

export const events = {
  created: (db: DatabaseRecord) => lifecycle('database.created', db),
  updated: (db: DatabaseRecord) => lifecycle('database.updated', db),
  statusChanged: (db: DatabaseRecord, previous: DatabaseStatus) =>
    event(db, 'database.status_changed', { name: db.name, status: db.status, previous_status: previous, reason: db.statusReason }),
  ruleAdded: (db: DatabaseRecord, rule: AllowlistRule) => event(db, 'database.allowlist_rule_added', { rule_id: rule.id, cidr: rule.cidr }),
  ruleRemoved: (db: DatabaseRecord, rule: AllowlistRule) => event(db, 'database.allowlist_rule_removed', { rule_id: rule.id, cidr: rule.cidr }),
};
