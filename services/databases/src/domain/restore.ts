// Restore and fork: a new, independent database (its own id, short id, credentials, volume
// and backups) made from a backup of another. Neither ever touches the source. Both are
// provisioning (provision.ts) with a source: the new row carries what it is made from,
// and the cluster builds its data from the source's backup repository when it creates it.
//
// When the source has no completed backup yet, a backup is started (`triggered`) and the
// call is a 409 `backup_pending`; the same call succeeds once that backup has completed.
import { ConflictError, InputError, NotFoundError, isUuid } from '@pier/kit';
import type { DatabaseRecord, RestoreSource } from './database.ts';
import type { BackupRecord } from './backup-records.ts';
import { checkName, type ProvisionSpec } from './rules.ts';
import { backupNotFound, recoveryWindow, resyncBackups, sealArchive, startBackup } from './backups.ts';
import { createDatabase } from './provision.ts';
import { findWithBackups, type DatabasesContext, type Scope } from './context.ts';

export interface RestoreInput {
  name?: string;
  backup_name?: string;
  target_time?: string;
}

export interface ForkInput {
  name?: string;
  target_vpc_id?: string;
}

function invalid(field: string, message: string): InputError {
  return new InputError(`${field}: ${message}`, 'invalid_request', { field });
}

const vpcNotFound = () => new NotFoundError('target VPC not found in this workspace', 'vpc_not_found');

/** `target_time`: ISO 8601 with a date, a time and a zone (a time without one would be ambiguous). */
export function parseTargetTime(text: string): Date {
  const iso = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$/i;
  const at = iso.test(text.trim()) ? new Date(text.trim().replace(' ', 'T')) : new Date(NaN);
  if (Number.isNaN(at.getTime())) throw invalid('target_time', `"${text}" is not an ISO 8601 time with a zone, such as 2026-11-25T06:00:00Z`);
  return at;
}

export async function restoreDatabase(ctx: DatabasesContext, scope: Scope, id: string, input: RestoreInput): Promise<DatabaseRecord> {
  const source = await findWithBackups(ctx, scope, id);
  const name = checkName(input.name ?? '');
  let target: Date | null = null;
  if (source.engine === 'mysql') {
    if (input.target_time !== undefined) {
      throw invalid('target_time', 'point-in-time recovery is for postgresql databases; a mysql database is restored from a named backup (backup_name)');
    }
    if (input.backup_name === undefined) throw invalid('backup_name', 'is required for mysql databases: name the backup to restore (GET backups lists them)');
  } else if (input.target_time !== undefined) {
    target = parseTargetTime(input.target_time);
  }
  await refuseTakenName(ctx, scope.vpcId, name);
  return ctx.locks.run(source.id, async () => {
    const chosen = await chooseBackup(ctx, source, input.backup_name, target);
    return createDatabase(ctx, scope, specFrom(source, name), {
      ...sourceOf(source, 'restore', chosen),
      // Without a named backup, pgBackRest restores the newest one that ended before the target.
      backupRef: target && input.backup_name === undefined ? null : chosen.ref,
      targetTime: target?.toISOString() ?? null,
    });
  });
}

/**
 * A fork: the state of the source's newest completed backup (not the source's state this
 * instant), in the source's VPC or another VPC of the same workspace.
 */
export async function forkDatabase(ctx: DatabasesContext, scope: Scope, id: string, input: ForkInput, identityToken: string): Promise<DatabaseRecord> {
  const source = await findWithBackups(ctx, scope, id);
  const name = checkName(input.name ?? '');
  const vpcId = (input.target_vpc_id ?? scope.vpcId).toLowerCase();
  if (vpcId !== scope.vpcId) {
    if (!isUuid(vpcId) || !(await ctx.vpcs.isWorkspaceVpc(identityToken, vpcId))) throw vpcNotFound();
  }
  await refuseTakenName(ctx, vpcId, name);
  return ctx.locks.run(source.id, async () => {
    const chosen = await chooseBackup(ctx, source, undefined, null);
    return createDatabase(ctx, { workspaceId: scope.workspaceId, vpcId }, specFrom(source, name), {
      ...sourceOf(source, 'fork', chosen),
      backupRef: chosen.ref,
      targetTime: null,
    });
  });
}

/** Checked before any backup is triggered, so a taken name is a 409 of its own at once. */
async function refuseTakenName(ctx: DatabasesContext, vpcId: string, name: string): Promise<void> {
  if (await ctx.store.nameTaken(vpcId, name)) throw new ConflictError('a database with this name already exists in the VPC', 'already_exists');
}

/** The new database: the source's engine, version, size and storage; no replicas, no external access. */
function specFrom(source: DatabaseRecord, name: string): ProvisionSpec {
  return {
    name,
    engine: source.engine,
    instanceType: source.instanceType,
    storageGb: source.storageGb,
    version: source.version,
    replicas: source.engine === 'mysql' ? 1 : 0,
    externalAccessEnabled: false,
  };
}

function sourceOf(source: DatabaseRecord, kind: RestoreSource['kind'], backup: BackupRecord): Omit<RestoreSource, 'backupRef' | 'targetTime'> {
  return { kind, databaseId: source.id, shortId: source.shortId, vpcId: source.vpcId, engine: source.engine, backupName: backup.name };
}

/**
 * The backup to restore (the caller holds the source's lock): the named one, or the newest
 * completed one (ended before `target`, when given). A target is checked against the
 * recovery window, and the source's archive is sealed so that the instant is recoverable.
 */
async function chooseBackup(ctx: DatabasesContext, source: DatabaseRecord, name: string | undefined, target: Date | null): Promise<BackupRecord> {
  const { backups, listing } = await resyncBackups(ctx, source);
  let chosen: BackupRecord | undefined;
  if (name !== undefined) {
    chosen = backups.find((b) => b.name === name);
    if (!chosen) throw backupNotFound();
    if (chosen.status === 'running') throw new ConflictError(`backup ${name} is still running; retry once it has completed`, 'backup_pending');
    if (chosen.status === 'failed') throw new ConflictError(`backup ${name} failed (${chosen.error ?? 'no reason given'}); choose another`, 'backup_failed');
  } else {
    const completed = backups.filter((b) => b.status === 'completed');
    if (completed.length === 0) return trigger(ctx, source, backups);
    chosen = (target && completed.find((b) => b.completedAt! < target)) || completed[0]!;
  }
  if (target) {
    const window = recoveryWindow(source, backups, listing, ctx.now());
    const at = target.toISOString();
    if (!window) throw invalid('target_time', `${at} cannot be recovered: no point in time is recoverable yet`);
    const from = name === undefined ? window.earliest : new Date(chosen.completedAt!.getTime() + 1000);
    if (target < from || target > window.latest) {
      const what = name === undefined ? 'the recovery window' : `the span backup ${name} can recover`;
      throw invalid('target_time', `${at} is outside ${what}: ${from.toISOString()} to ${window.latest.toISOString()}`);
    }
    if (listing.archiving && !source.deletedAt) await sealArchive(ctx, source);
  }
  return chosen;
}

/** No completed backup: one is started (unless one is running), and the caller is told to retry. */
async function trigger(ctx: DatabasesContext, source: DatabaseRecord, backups: BackupRecord[]): Promise<never> {
  const running = backups.find((b) => b.status === 'running');
  if (running) throw pending(source, running.name, 'is running');
  if (source.deletedAt || source.status !== 'running') {
    throw new ConflictError(`database ${source.name} has no completed backup, and it is not running, so none can be taken`, 'backup_unavailable');
  }
  const started = await startBackup(ctx, source, 'triggered');
  throw pending(source, started.name, 'was started');
}

function pending(source: DatabaseRecord, backup: string, what: string): ConflictError {
  return new ConflictError(
    `database ${source.name} has no completed backup yet: backup ${backup} ${what}; retry shortly, once it has completed`,
    'backup_pending',
  );
}
