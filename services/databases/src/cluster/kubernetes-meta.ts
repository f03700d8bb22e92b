import { vpcNamespace } from '@pier/kit';
import type { ClusterRef } from '../domain/cluster-port.ts';
import { shortIdOf } from '../domain/database.ts';
import type { S3Store } from './backup-store.ts';

// What every manifest of the kubernetes adapter shares: the kinds, the names derived from
// a database's short id, and the labels that find its objects again.

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
};

/** The user Pier's own Jobs in a VPC namespace (set-up, restore renames) run their client scripts as. */
export const JOB_USER = 65532;

export const CNPG = 'postgresql.cnpg.io/v1';
export const MOCO = 'moco.cybozu.com/v1beta2';

export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  database: 'pier.dev/database-id',
  vpc: 'pier.dev/vpc-id',
  workspace: 'pier.dev/workspace-id',
  engine: 'pier.dev/engine',
  /** Set by the adapter on everything it applies (but namespaces, which services share). */
  installation: 'pier.dev/installation',
  backupName: 'pier.dev/backup-name',
  /** The built-in mode's pods: primary, replica, pooler-rw, pooler-ro. */
  role: 'pier.dev/role',
  backupMethod: 'pier.dev/backup-method',
} as const;

/** What a database runs on: listed by `observe` and `list` (the sweep). */
export const SELECTOR = `${LABELS.managedBy}=pier,${LABELS.component}=database`;

/**
 * The backups of a database (CloudNativePG Backups, MOCO backup Jobs). A component of
 * their own: they outlive the database until its backups are purged, so neither the
 * status reads nor the sweep of orphans may count them as the database's.
 */
export const BACKUP_COMPONENT = 'database-backup';
export const backupSelector = (databaseId: string) => `${LABELS.managedBy}=pier,${LABELS.component}=${BACKUP_COMPONENT},${LABELS.database}=${databaseId}`;

export interface KubernetesSettings {
  storageClass?: string;
  /** Addresses pods (the control plane included) connect from inside the cluster. */
  clusterNetworks: string[];
  postgresImage: (version: string) => string;
  mysqlImage: (version: string) => string;
  /** Where backups go; without it no database has backups (nor can be restored). */
  backupStore?: S3Store;
}

export const names = (shortId: string) => {
  const cluster = `db-${shortId}`;
  return {
    cluster,
    appSecret: `${cluster}-app`,
    consoleSecret: `${cluster}-console`,
    poolerRw: `${cluster}-pooler-rw`,
    poolerRo: `${cluster}-pooler-ro`,
    external: `${cluster}-external`,
    externalRo: `${cluster}-external-ro`,
    initJob: `${cluster}-init`,
    /** The backup store's keys (and CA), for the operators' backup tools. */
    storeSecret: `${cluster}-backup-store`,
    /** MOCO: the BackupPolicy and the ServiceAccount its Jobs run as. */
    backupPolicy: `${cluster}-backup`,
    backupAccount: `${cluster}-backup`,
    /** A restored database: the Job that makes the restored data its own, and (postgresql) the login it uses. */
    restoreJob: `${cluster}-restore`,
    restoreSecret: `${cluster}-restore`,
    // What the operators create from the cluster's name.
    pgRw: `${cluster}-rw`,
    pgRo: `${cluster}-ro`,
    pgR: `${cluster}-r`,
    mocoPrimary: `moco-${cluster}-primary`,
    mocoReplica: `moco-${cluster}-replica`,
    mocoSecret: `moco-${cluster}`,
    mocoBackupCronJob: `moco-backup-${cluster}`,
  };
};

export function meta(db: ClusterRef & { workspaceId?: string }, name: string) {
  return {
    name,
    namespace: vpcNamespace(db.vpcId),
    labels: {
      [LABELS.managedBy]: 'pier',
      [LABELS.component]: 'database',
      [LABELS.database]: db.id,
      [LABELS.vpc]: db.vpcId,
      [LABELS.engine]: db.engine,
      ...(db.workspaceId ? { [LABELS.workspace]: db.workspaceId } : {}),
    },
  };
}

/** `KEY` from a Secret, as a container's environment variable. */
export const secretEnv = (name: string, secret: string, key: string) => ({ name, valueFrom: { secretKeyRef: { name: secret, key } } });

/** The databases objects belong to, by their labels (`list`, the sweep); each database once. */
export function refsOf(objects: { metadata?: { labels?: Record<string, string> } }[]): ClusterRef[] {
  const refs = new Map<string, ClusterRef>();
  for (const o of objects) {
    const labels = o.metadata?.labels ?? {};
    const id = labels[LABELS.database];
    const vpcId = labels[LABELS.vpc];
    const engine = labels[LABELS.engine];
    if (!id || !vpcId || (engine !== 'postgresql' && engine !== 'mysql')) continue;
    refs.set(id, { id, shortId: shortIdOf(id), vpcId, engine });
  }
  return [...refs.values()];
}
