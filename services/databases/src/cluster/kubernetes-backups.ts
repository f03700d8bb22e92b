import { vpcNamespace } from '@pier/kit';
import type { BackupMethod } from '../domain/backup-records.ts';
import type { ClusterDatabase, ClusterRef } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';
import { BACKUP_COMPONENT, CNPG, LABELS, MOCO, meta, names, secretEnv, type Manifest } from './kubernetes-meta.ts';

// Backups on the kubernetes adapter, as manifests (pure functions, validated in tests) and
// the places in the bucket where the operators put them.
//
// Pier's own scheduler (domain/backup-worker.ts) starts every backup on both adapters
// (`startBackup(..., 'scheduled')`) and applies count-based retention, which neither
// CloudNativePG's time-based `retentionPolicy` nor MOCO can express. So every backup here is
// one on-demand object, labelled with its name and method so that listing is one call:
//
//   CloudNativePG  a `Backup` (method barmanObjectStore) of a Cluster that archives its
//                  WAL continuously to `s3://<bucket>/<prefix>/<database id>`; no
//                  ScheduledBackup and no retentionPolicy.
//   MOCO           a Job made from the CronJob MOCO keeps for the database's BackupPolicy
//                  (`cronjob.kubernetes.io/instantiate: manual`, MOCO's documented way to back
//                  up now), whose own schedule never fires (NEVER below).

/** The store Secret's keys. */
const KEY = { accessKeyId: 'ACCESS_KEY_ID', secretAccessKey: 'ACCESS_SECRET_KEY', region: 'REGION', ca: 'ca.crt' } as const;

export const endpointUrl = (store: S3Store) => `https://${store.host}:${store.port}`;

/** The store's keys in the database's namespace: the operators' backup tools read them from there. */
export function storeSecret(db: ClusterDatabase, store: S3Store): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(db, names(db.shortId).storeSecret),
    type: 'Opaque',
    stringData: {
      [KEY.accessKeyId]: store.accessKeyId,
      [KEY.secretAccessKey]: store.secretAccessKey,
      [KEY.region]: store.region,
      ...(store.caPem ? { [KEY.ca]: store.caPem } : {}),
    },
  };
}

// ---------- CloudNativePG ----------

/** A database's own place in the bucket: its WAL archive and base backups (`<server>/wals`, `<server>/base`). */
export const repositoryPrefix = (store: S3Store, databaseId: string) => `${store.prefix.replace(/^\/+|\/+$/g, '')}/${databaseId}/`;

/**
 * barman-cloud's configuration for the repository of `source` (the database itself, or the
 * one a restore reads from), with the credentials of `db`'s own store Secret.
 */
export function barmanObjectStore(db: ClusterRef, source: ClusterRef, store: S3Store) {
  const secret = names(db.shortId).storeSecret;
  return {
    destinationPath: `s3://${store.bucket}/${repositoryPrefix(store, source.id).replace(/\/$/, '')}`,
    endpointURL: endpointUrl(store),
    // Named explicitly (it defaults to the cluster's name): restores find the source's folder by it.
    serverName: names(source.shortId).cluster,
    s3Credentials: {
      accessKeyId: { name: secret, key: KEY.accessKeyId },
      secretAccessKey: { name: secret, key: KEY.secretAccessKey },
      region: { name: secret, key: KEY.region },
    },
    ...(store.caPem ? { endpointCA: { name: secret, key: KEY.ca } } : {}),
    wal: { compression: 'gzip' },
    data: { compression: 'gzip' },
  };
}

/** `Cluster.spec.backup`: continuous WAL archiving and base backups, no retention (Pier's). */
export function cnpgBackupConfig(db: ClusterDatabase, store: S3Store) {
  return { barmanObjectStore: barmanObjectStore(db, db, store) };
}

/** The object of one backup (a Backup, a Job): its name holds the cluster's and the backup's. */
export function backupObjectName(shortId: string, backup: string): string {
  const name = `${names(shortId).cluster}-backup-${backup}`;
  // Pier names backups `YYYYMMDD-HHMMSS[-n]` (domain/backup.ts), which always fit.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 63) throw new Error(`backup name "${backup}" cannot name a kubernetes object`);
  return name;
}

function backupMeta(db: ClusterRef, name: string, method: BackupMethod) {
  const m = meta(db, backupObjectName(db.shortId, name));
  return { ...m, labels: { ...m.labels, [LABELS.component]: BACKUP_COMPONENT, [LABELS.backupName]: name, [LABELS.backupMethod]: method } };
}

export function cnpgBackup(db: ClusterRef, name: string, method: BackupMethod): Manifest {
  return {
    apiVersion: CNPG,
    kind: 'Backup',
    metadata: backupMeta(db, name, method),
    spec: { cluster: { name: names(db.shortId).cluster }, method: 'barmanObjectStore' },
  };
}

// ---------- MOCO ----------

/**
 * MOCO backs up only through the CronJob it makes from a BackupPolicy, and Pier starts
 * every backup itself, so the policy's schedule must never fire: February 31st parses as
 * a valid cron (MOCO's webhook accepts it) but never comes. Kubernetes' CronJob controller
 * finds no next run for it, reports an `InvalidSchedule` warning event and leaves the
 * CronJob alone; Jobs made from it by hand run as usual.
 */
export const NEVER = '0 0 31 2 *';

/** Where the backup Jobs mount the store's CA (MOCO's `bucketConfig.caCert` is a path). */
const CA_DIR = '/etc/pier-backup-store';

/** The backup and restore Jobs' configuration: the bucket, its credentials, a scratch volume. */
export function mocoJobConfig(db: ClusterRef, store: S3Store) {
  const n = names(db.shortId);
  return {
    serviceAccountName: n.backupAccount,
    bucketConfig: {
      bucketName: store.bucket,
      endpointURL: endpointUrl(store),
      region: store.region,
      usePathStyle: true,
      ...(store.caPem ? { caCert: `${CA_DIR}/${KEY.ca}` } : {}),
    },
    env: [secretEnv('AWS_ACCESS_KEY_ID', n.storeSecret, KEY.accessKeyId), secretEnv('AWS_SECRET_ACCESS_KEY', n.storeSecret, KEY.secretAccessKey)],
    // The dump is written here before it is uploaded.
    workVolume: { emptyDir: {} },
    ...(store.caPem
      ? {
          volumes: [{ name: 'backup-store-ca', secret: { secretName: n.storeSecret, items: [{ key: KEY.ca, path: KEY.ca }] } }],
          volumeMounts: [{ name: 'backup-store-ca', mountPath: CA_DIR, readOnly: true }],
        }
      : {}),
  };
}

/** The identity MOCO's backup and restore Jobs run as (MOCO binds its own Role to it). */
export function mocoServiceAccount(db: ClusterDatabase): Manifest {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(db, names(db.shortId).backupAccount) };
}

export function mocoBackupPolicy(db: ClusterDatabase, store: S3Store): Manifest {
  return {
    apiVersion: MOCO,
    kind: 'BackupPolicy',
    metadata: meta(db, names(db.shortId).backupPolicy),
    spec: {
      schedule: NEVER,
      jobConfig: mocoJobConfig(db, store),
    },
  };
}

/** What this adapter reads of MOCO's CronJob. */
export interface CronJobObject {
  spec?: { jobTemplate?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Record<string, unknown> } };
}

/**
 * A backup now: a Job from MOCO's CronJob (`kubectl create job --from=cronjob/...`, as
 * MOCO documents), labelled like the CloudNativePG Backups. No owner reference to the
 * CronJob, so MOCO's history limits and the CronJob's deletion never take it away.
 */
export function mocoBackupJob(db: ClusterRef, name: string, method: BackupMethod, cron: CronJobObject): Manifest {
  const template = cron.spec?.jobTemplate;
  if (!template?.spec) throw new Error('the CronJob has no job template');
  const m = backupMeta(db, name, method);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...m,
      labels: { ...(template.metadata?.labels ?? {}), ...m.labels },
      annotations: { ...(template.metadata?.annotations ?? {}), 'cronjob.kubernetes.io/instantiate': 'manual' },
    },
    spec: structuredClone(template.spec),
  };
}

/** Where MOCO keeps a cluster's backups: `moco/<namespace>/<cluster>/<YYYYMMDD-hhmmss>/`. */
export const mocoPrefix = (db: ClusterRef) => `moco/${vpcNamespace(db.vpcId)}/${names(db.shortId).cluster}/`;
