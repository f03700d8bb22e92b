import { RESTRICTED_CONTAINER_SECURITY, restrictedPodSecurity, vpcNamespace } from '@pier/kit';
import { appUserOf } from '../domain/database.ts';
import type { ClusterDatabase, RestoreSpec } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';
import { barmanObjectStore, mocoJobConfig } from './kubernetes-backups.ts';
import { JOB_USER, meta, names, secretEnv, type KubernetesSettings, type Manifest } from './kubernetes-meta.ts';

// A database made from another's backup (restore, fork). The operators rebuild the source's
// data, which holds the source's database and app user, both named after the source's short
// id. The new database must answer as its own `<short id>` / `app_<short id>` with its own
// credentials (the connection details and the console use those names), so a Job renames
// what was restored once it is up; `observe` reports the database ready only once that Job
// has succeeded. Every step of the Jobs is idempotent: a retried Job finishes the work.

export type Restored = ClusterDatabase & { restore: RestoreSpec };

export const isRestored = (db: ClusterDatabase): db is Restored => db.restore !== null;

const JOB_RETRIES = 60;

function restoreJob(db: Restored, image: string, script: string, env: object[]): Manifest {
  const m = meta(db, names(db.shortId).restoreJob);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: m,
    spec: {
      // The server takes a while to come up from a backup; until then the Job fails and is retried.
      backoffLimit: JOB_RETRIES,
      template: {
        metadata: { labels: m.labels },
        spec: {
          restartPolicy: 'OnFailure',
          // A client running a script: any unprivileged user will do, as the VPC namespace demands.
          securityContext: restrictedPodSecurity(JOB_USER),
          containers: [{ name: 'restore', image, command: ['sh', '-c', script], env, securityContext: RESTRICTED_CONTAINER_SECURITY }],
        },
      },
    },
  };
}

// ---------- CloudNativePG ----------

/**
 * The source's app role after a restore: the restored database's owner, and the login the
 * rename Job uses. Its password is reset from a Secret of the new database's own (the
 * source's no longer opens it); CREATEDB and membership in the new app role are what
 * renaming the database and handing it over need, without a superuser.
 */
export function sourceOwnerRole(db: Restored) {
  return {
    name: appUserOf(db.restore.source.shortId),
    ensure: 'present',
    login: true,
    createdb: true,
    inRoles: [appUserOf(db.shortId)],
    passwordSecret: { name: names(db.shortId).restoreSecret },
  };
}

/** Whether the restored names differ from the new ones (a short id reused by chance would not). */
export const renames = (db: Restored) => db.restore.source.shortId !== db.shortId;

/**
 * `bootstrap.recovery` from the source's repository, declared as an external cluster:
 * `targetTime` for a point in time (from the named backup when there is one, else the
 * newest one before it), `backupID` + `targetImmediate` for a named backup or a fork.
 * `database`/`owner` name what the backup holds, so CloudNativePG creates nothing new.
 * The `secret` must be the source owner's (CloudNativePG keeps the owner's password equal
 * to it and refuses a Secret of another user): it resets that role's password.
 */
export function cnpgRecovery(db: Restored, store: S3Store) {
  const { source, backupRef, targetTime } = db.restore;
  const n = names(db.shortId);
  const recoveryTarget = targetTime
    ? { targetTime: targetTime.toISOString(), ...(backupRef ? { backupID: backupRef } : {}) }
    : backupRef
      ? { backupID: backupRef, targetImmediate: true }
      : undefined;
  return {
    bootstrap: {
      recovery: {
        source: names(source.shortId).cluster,
        database: source.shortId,
        owner: appUserOf(source.shortId),
        secret: { name: renames(db) ? n.restoreSecret : n.appSecret },
        ...(recoveryTarget ? { recoveryTarget } : {}),
      },
    },
    externalClusters: [{ name: names(source.shortId).cluster, barmanObjectStore: barmanObjectStore(db, source, store) }],
  };
}

/**
 * Renames the restored database to `<short id>` and hands it, and everything in it the
 * source's app role owned, to `app_<short id>`. Logs in as the source's app role (see
 * sourceOwnerRole). What it does not move: privileges granted to the source's role on
 * objects it does not own, and its ALTER DEFAULT PRIVILEGES (that role stays, unknown to
 * the customer, with a password only Pier holds).
 */
export function cnpgRestoreJob(db: Restored, s: KubernetesSettings): Manifest {
  const n = names(db.shortId);
  const from = db.restore.source.shortId;
  const script = renames(db)
    ? [
        'set -eu',
        'q() { psql -X -v ON_ERROR_STOP=1 -qtA "$@"; }',
        `if [ "$(q -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = '${from}'")" = 1 ]; then`,
        `  q -d postgres -c 'ALTER DATABASE "${from}" RENAME TO "${db.shortId}"'`,
        'fi',
        `q -d postgres -c 'ALTER DATABASE "${db.shortId}" OWNER TO "${appUserOf(db.shortId)}"'`,
        `q -d '${db.shortId}' -c 'REASSIGN OWNED BY "${appUserOf(from)}" TO "${appUserOf(db.shortId)}"'`,
      ].join('\n')
    : 'exit 0';
  const env = [
    { name: 'PGHOST', value: n.pgRw },
    { name: 'PGPORT', value: '5432' },
    { name: 'PGUSER', value: appUserOf(from) },
    secretEnv('PGPASSWORD', n.restoreSecret, 'password'),
    { name: 'PGCONNECT_TIMEOUT', value: '10' },
    { name: 'PGAPPNAME', value: 'pier-restore' },
  ];
  return restoreJob(db, s.postgresImage(db.version), script, renames(db) ? env : []);
}

// ---------- MOCO ----------

/**
 * `MySQLCluster.spec.restore`: MOCO loads the source's newest dump taken at or before
 * `restorePoint`. The backup's ref on this adapter is the time its Job finished
 * (kubernetes-backup-listing.ts), so that dump is the backup's own.
 */
export function mocoRestore(db: Restored, store: S3Store) {
  const { source, backupRef } = db.restore;
  if (!backupRef) throw new Error(`backup ${db.restore.backupName} has no completion time to restore it at`);
  return {
    sourceName: names(source.shortId).cluster,
    sourceNamespace: vpcNamespace(source.vpcId),
    restorePoint: new Date(backupRef).toISOString().replace(/\.\d+Z$/, 'Z'),
    jobConfig: mocoJobConfig(db, store),
  };
}

/**
 * Moves the restored tables into the database's own schema with RENAME TABLE (a metadata
 * change, no copy), drops the source's app user (its password is the source's), and drops
 * the source's schema once nothing is left in it. The init Job gives the new app user its
 * grants. What it does not move: views, stored routines and events stay in the source's
 * schema (then kept), and a table with triggers cannot change schema, which fails the Job
 * (the database then reads `error` with the Job's failure). Other users of the source come
 * back with their passwords and grants as they were.
 */
export function mocoRestoreJob(db: Restored, s: KubernetesSettings): Manifest {
  const n = names(db.shortId);
  const from = db.restore.source.shortId;
  const to = db.shortId;
  const script = renames(db)
    ? [
        'set -eu',
        `m() { mysql -h ${n.mocoPrimary} -u moco-writable -p"$WRITABLE_PASSWORD" -N -B "$@"; }`,
        // Quoted here-documents: the SQL reaches mysql as written, backticks and all.
        "cat >/tmp/plan.sql <<'SQL'",
        `CREATE DATABASE IF NOT EXISTS \`${to}\`;`,
        `SELECT CONCAT('RENAME TABLE \`${from}\`.\`', REPLACE(TABLE_NAME, '\`', '\`\`'), '\` TO \`${to}\`.\`', REPLACE(TABLE_NAME, '\`', '\`\`'), '\`;')`,
        `  FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${from}' AND TABLE_TYPE = 'BASE TABLE';`,
        'SQL',
        'm --raw </tmp/plan.sql >/tmp/move.sql',
        'm </tmp/move.sql',
        "cat >/tmp/left.sql <<'SQL'",
        `DROP USER IF EXISTS '${appUserOf(from)}'@'%';`,
        `SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${from}')`,
        `  + (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '${from}')`,
        `  + (SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = '${from}');`,
        'SQL',
        'left=$(m </tmp/left.sql)',
        `if [ "$left" = 0 ]; then echo 'DROP DATABASE IF EXISTS \`${from}\`;' | m; fi`,
      ].join('\n')
    : 'exit 0';
  return restoreJob(db, s.mysqlImage(db.version), script, [secretEnv('WRITABLE_PASSWORD', n.mocoSecret, 'WRITABLE_PASSWORD')]);
}
