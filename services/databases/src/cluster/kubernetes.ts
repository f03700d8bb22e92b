import { type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { isKubernetesNotFound, vpcNamespace, UnavailableError, ConflictError, type Logger } from '@pier/kit';
import { WatchCache } from '@pier/kit/kubernetes-watch-cache';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import { appUserOf, CONSOLE_USER, shortIdOf, type Engine } from '../domain/database.ts';
import type { ExternalDomains } from '../domain/context.ts';
import type { Observation } from '../domain/status.ts';
import type { BackupMethod } from '../domain/backup-records.ts';
import { KubernetesObjects } from './kubernetes-objects.ts';
import { observeCnpg, observeMoco, slimObserved, type K8sObject } from './kubernetes-observe.ts';
import type { ClusterDatabase, ClusterRef, Credentials, DatabaseCluster, Endpoints, RepositoryListing, SqlTarget } from '../domain/cluster-port.ts';
import { CNPG, MOCO, LABELS, SELECTOR, backupSelector, names, refsOf, type KubernetesSettings } from './kubernetes-meta.ts';
import { cnpgCluster, cnpgPooler, credentialSecret, externalService, mocoCluster, mocoInitJob, namespaceManifest } from './kubernetes-manifests.ts';
import { backupObjectName, cnpgBackup, mocoBackupJob, mocoBackupPolicy, mocoServiceAccount, storeSecret, type CronJobObject } from './kubernetes-backups.ts';
import { cnpgRestoreJob, isRestored, mocoRestoreJob, renames } from './kubernetes-restore.ts';
import { cnpgListing, mocoListing, type BackedUpCluster, type BackupObject } from './kubernetes-backup-listing.ts';
import { deleteCnpgBackup, deleteMocoBackups, mocoFolderTime, purgeRepository } from './kubernetes-bucket.ts';
import { S3Objects } from './s3-objects.ts';
import type { S3Store } from './backup-store.ts';

// The production adapter: CloudNativePG for postgresql, MOCO for mysql, objects applied
// with server-side apply (idempotent, so `apply` converges whatever state it finds).

const CAPABILITIES: ClusterCapabilities = {
  adapter: 'kubernetes',
  engines: {
    // CloudNativePG's supported majors; `replicas` = read replicas (instances - 1).
    postgresql: {
      versions: ['13', '14', '15', '16', '17'],
      defaultVersion: '16',
      server: 'PostgreSQL',
      replicas: { min: 0, max: 8, default: 0, shrinks: true },
    },
    // MOCO runs MySQL 8.0 and 8.4; `replicas` = instances, 1, 3 or 5.
    mysql: { versions: ['8.0', '8.4'], defaultVersion: '8.4', server: 'MySQL', replicas: { min: 1, max: 5, default: 1, shrinks: false } },
  },
  enforcesStorage: true,
};

const PG_IMAGES: Record<string, string> = { '13': '13.22', '14': '14.19', '15': '15.14', '16': '16.10', '17': '17.6' };
const MYSQL_IMAGES: Record<string, string> = { '8.0': '8.0.43', '8.4': '8.4.6' };

export interface KubernetesClusterOptions {
  /**
   * This installation's id, labelled on every object the adapter applies: `list` (and so
   * the sweep of orphans) sees only objects carrying it. Without it `list` finds nothing.
   */
  installation?: string;
  storageClass?: string;
  clusterNetworks?: string[];
  domains: ExternalDomains;
  timeoutMs?: number;
  /** The S3-compatible store backups go to; without it there are no backups (nor restores). */
  backupStore?: S3Store;
  /**
   * Keep watch-fed copies of the operators' clusters and of our Jobs (kit's WatchCache), so a
   * VPC's observation reads memory instead of three lists; an operator whose CRD is not
   * installed has none. Without it (or while a watch is not connected) observation lists.
   */
  watch?: { log: Logger };
}

/** The kinds observation reads, watched cluster-wide under the databases' selector. */
const OBSERVED = [
  { apiVersion: CNPG, kind: 'Cluster', path: '/apis/postgresql.cnpg.io/v1/clusters' },
  { apiVersion: MOCO, kind: 'MySQLCluster', path: '/apis/moco.cybozu.com/v1beta2/mysqlclusters' },
  { apiVersion: 'batch/v1', kind: 'Job', path: '/apis/batch/v1/jobs' },
] as const;

/** The kinds that hold a database's backups, by engine. */
const BACKUP_KIND: Record<Engine, [string, string]> = { postgresql: [CNPG, 'Backup'], mysql: ['batch/v1', 'Job'] };
const CLUSTER_KIND: Record<Engine, [string, string]> = { postgresql: [CNPG, 'Cluster'], mysql: [MOCO, 'MySQLCluster'] };

export const backupsUnavailable = () =>
  new ConflictError(
    'backups need an S3-compatible object store on the kubernetes cluster: set PIER_DATABASES_BACKUP_S3_ENDPOINT, PIER_DATABASES_BACKUP_S3_BUCKET, PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID and PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY',
    'backups_unavailable',
  );

const password = () => randomBytes(24).toString('hex');

export class KubernetesCluster extends KubernetesObjects implements DatabaseCluster {
  readonly capabilities = CAPABILITIES;
  private readonly settings: KubernetesSettings;
  private readonly bucket?: { store: S3Store; s3: S3Objects };
  private readonly watched?: WatchCache<K8sObject>[];

  constructor(
    kc: KubeConfig,
    private readonly opts: KubernetesClusterOptions,
  ) {
    super(kc, opts.installation, opts.timeoutMs);
    if (opts.watch) {
      const { log } = opts.watch;
      this.watched = OBSERVED.map((k) => new WatchCache(kc, { ...k, labelSelector: SELECTOR, slim: slimObserved, log }));
      for (const w of this.watched) w.start();
    }
    this.settings = {
      storageClass: opts.storageClass,
      clusterNetworks: opts.clusterNetworks ?? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
      postgresImage: (v) => `ghcr.io/cloudnative-pg/postgresql:${PG_IMAGES[v] ?? v}`,
      mysqlImage: (v) => `ghcr.io/cybozu-go/moco/mysql:${MYSQL_IMAGES[v] ?? v}`,
      backupStore: opts.backupStore,
    };
    if (opts.backupStore) this.bucket = { store: opts.backupStore, s3: new S3Objects(opts.backupStore) };
  }

  /** The bucket, for the backup methods: without a store there are no backups. */
  private requireBucket(): { store: S3Store; s3: S3Objects } {
    if (!this.bucket) throw backupsUnavailable();
    return this.bucket;
  }

  /** The bucket refusing or out of reach is the backup repository being unavailable: a 503. */
  private async inBucket<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if ((err as { name?: string })?.name === 'PierError') throw err;
      throw new UnavailableError(`the backup store failed: ${(err as Error)?.message ?? err}`, 'backup_repository_unavailable');
    }
  }

  /** A credential Secret is created once; its password is never regenerated. */
  private async ensureSecret(db: ClusterDatabase, name: string, username: string): Promise<void> {
    if (await this.read('v1', 'Secret', name, vpcNamespace(db.vpcId))) return;
    await this.applyObject(credentialSecret(db, name, username, password()));
  }

  async apply(db: ClusterDatabase): Promise<void> {
    const store = this.bucket?.store;
    if (db.restore && !store) throw backupsUnavailable();
    if (db.restore && db.engine === 'mysql' && !db.restore.backupRef) {
      // MOCO restores "the newest dump at or before a time": a backup without its end time cannot be named.
      throw new ConflictError(`backup ${db.restore.backupName} has no completion time to restore it at`, 'backup_unavailable');
    }
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const n = names(db.shortId);
      await this.applyObject(namespaceManifest(db.vpcId));
      await this.ensureSecret(db, n.appSecret, appUserOf(db.shortId));
      await this.ensureSecret(db, n.consoleSecret, CONSOLE_USER);
      // Re-applied every time: rotated store keys reach the operators at the next apply.
      if (store) await this.applyObject(storeSecret(db, store));
      if (db.engine === 'postgresql') {
        // The source's owner keeps a password of this database's own (kubernetes-restore.ts).
        if (isRestored(db) && renames(db)) await this.ensureSecret(db, n.restoreSecret, appUserOf(db.restore.source.shortId));
        await this.applyObject(cnpgCluster(db, this.settings));
        await this.applyObject(cnpgPooler(db, 'rw'));
        // A read-only pooler needs replicas behind the -ro service.
        if (db.replicas > 0) await this.applyObject(cnpgPooler(db, 'ro'));
        else await this.remove(CNPG, 'Pooler', n.poolerRo, ns);
        if (isRestored(db)) await this.applyObject(cnpgRestoreJob(db, this.settings));
      } else {
        if (store) {
          // Before the MySQLCluster that names the policy, so MOCO finds it at once.
          await this.applyObject(mocoServiceAccount(db));
          await this.applyObject(mocoBackupPolicy(db, store));
        }
        await this.applyObject(mocoCluster(db, this.settings));
        await this.applyObject(mocoInitJob(db, this.settings));
        if (isRestored(db)) await this.applyObject(mocoRestoreJob(db, this.settings));
      }
      const domain = this.opts.domains[db.engine];
      if (db.externalAccessEnabled) {
        await this.applyObject(externalService(db, false, domain && `${db.shortId}.${domain}`));
        await this.applyObject(externalService(db, true, domain && `${db.shortId}-ro.${domain}`));
      } else {
        await this.remove('v1', 'Service', n.external, ns);
        await this.remove('v1', 'Service', n.externalRo, ns);
      }
    });
  }

  async observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>> {
    const ns = vpcNamespace(vpcId);
    const list = async (apiVersion: string, kind: string) => {
      try {
        return (await this.api.list(apiVersion, kind, ns, undefined, undefined, undefined, undefined, SELECTOR)).items as unknown as K8sObject[];
      } catch (err) {
        if (isKubernetesNotFound(err)) return [];
        throw err;
      }
    };
    // From the watched copies while all three are connected; else one list per kind for the whole VPC, never one call per database.
    const cached = this.watched?.map((w) => w.items(ns));
    const [pg = [], my = [], jobs = []] =
      cached && cached.every((items) => items !== undefined) ? cached : await this.guard(() => Promise.all(OBSERVED.map((k) => list(k.apiVersion, k.kind))));
    const byId = (items: K8sObject[]) => new Map(items.map((o) => [o.metadata?.labels?.[LABELS.database] ?? '', o]));
    const pgById = byId(pg);
    const myById = byId(my);
    // A database may have two Jobs (MOCO's init, a restore's), told apart by name.
    const jobByName = new Map(jobs.map((j) => [j.metadata?.name ?? '', j]));
    const out = new Map<string, Observation>();
    for (const id of ids) {
      const n = names(shortIdOf(id));
      const c = pgById.get(id);
      const m = myById.get(id);
      out.set(
        id,
        c ? observeCnpg(c, jobByName.get(n.restoreJob)) : m ? observeMoco(m, jobByName.get(n.initJob), jobByName.get(n.restoreJob)) : { phase: 'absent' },
      );
    }
    return out;
  }

  /**
   * Everything the database runs on goes; its backups stay. Their data is in the bucket
   * (neither operator deletes it), and their objects (CloudNativePG Backups, MOCO backup
   * Jobs) are kept too, until `purgeBackups`: they are how a deleted database's backups are
   * still listed (with their names, methods and refs, which the bucket alone does not
   * hold: barman names a backup by its own start time, MOCO a folder by its own clock).
   */
  async delete(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const n = names(db.shortId);
      await this.remove('v1', 'Service', n.external, ns);
      await this.remove('v1', 'Service', n.externalRo, ns);
      await this.remove('batch/v1', 'Job', n.restoreJob, ns);
      if (db.engine === 'postgresql') {
        await this.remove(CNPG, 'Pooler', n.poolerRw, ns);
        await this.remove(CNPG, 'Pooler', n.poolerRo, ns);
        // The operator owns the instances' PVCs: deleting the Cluster removes the data.
        await this.remove(CNPG, 'Cluster', n.cluster, ns);
      } else {
        await this.remove('batch/v1', 'Job', n.initJob, ns);
        // MOCO removes the backup CronJob it made with the MySQLCluster.
        await this.remove(MOCO, 'MySQLCluster', n.cluster, ns);
        await this.remove(MOCO, 'BackupPolicy', n.backupPolicy, ns);
        await this.remove('v1', 'ServiceAccount', n.backupAccount, ns);
      }
      await this.remove('v1', 'Secret', n.appSecret, ns);
      await this.remove('v1', 'Secret', n.consoleSecret, ns);
      await this.remove('v1', 'Secret', n.storeSecret, ns);
      await this.remove('v1', 'Secret', n.restoreSecret, ns);
    });
  }

  async list(): Promise<ClusterRef[]> {
    const installation = this.opts.installation;
    if (!installation) return [];
    const selector = `${SELECTOR},${LABELS.installation}=${installation}`;
    const kinds: [string, string][] = [
      [CNPG, 'Cluster'],
      [CNPG, 'Pooler'],
      [MOCO, 'MySQLCluster'],
      ['batch/v1', 'Job'],
      ['v1', 'Secret'],
      ['v1', 'Service'],
      ['v1', 'ServiceAccount'],
      [MOCO, 'BackupPolicy'],
    ];
    const lists = await this.guard(() =>
      Promise.all(
        kinds.map(async ([apiVersion, kind]) => {
          try {
            // Every namespace at once: one call per kind.
            return (await this.api.list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, selector)).items as unknown as K8sObject[];
          } catch (err) {
            if (isKubernetesNotFound(err)) return []; // an operator that is not installed
            throw err;
          }
        }),
      ),
    );
    return refsOf(lists.flat());
  }

  private async secretPassword(db: ClusterRef, name: string): Promise<string> {
    const secret = await this.guard(() => this.read<{ data?: Record<string, string> } & KubernetesObject>('v1', 'Secret', name, vpcNamespace(db.vpcId)));
    const b64 = secret?.data?.password;
    if (!b64) throw new ConflictError('the database has no credentials in the cluster', 'database_unavailable');
    return Buffer.from(b64, 'base64').toString('utf8');
  }

  private hosts(db: ClusterRef & { replicas?: number }) {
    const n = names(db.shortId);
    const svc = (name: string) => `${name}.${vpcNamespace(db.vpcId)}.svc`;
    if (db.engine === 'postgresql') {
      const replicas = (db.replicas ?? 0) > 0;
      return {
        rw: svc(n.pgRw),
        // Without replicas the -ro service has no endpoints; -r reaches any instance.
        ro: svc(replicas ? n.pgRo : n.pgR),
        poolerRw: svc(n.poolerRw),
        poolerRo: svc(replicas ? n.poolerRo : n.poolerRw),
      };
    }
    return { rw: svc(n.mocoPrimary), ro: svc((db.replicas ?? 1) > 1 ? n.mocoReplica : n.mocoPrimary) };
  }

  async connection(db: ClusterDatabase): Promise<{ endpoints: Endpoints; credentials: Credentials }> {
    const h = this.hosts(db);
    const port = db.engine === 'postgresql' ? 5432 : 3306;
    const endpoints: Endpoints = { host: h.rw, port, readOnlyHost: h.ro, externalPort: db.externalAccessEnabled ? port : undefined };
    if (db.externalAccessEnabled && !this.opts.domains[db.engine]) {
      // No domain of ours to name it by: the addresses the load balancers were given.
      const n = names(db.shortId);
      endpoints.externalAddress = await this.loadBalancerAddress(n.external, vpcNamespace(db.vpcId));
      endpoints.externalAddressRo = await this.loadBalancerAddress(n.externalRo, vpcNamespace(db.vpcId));
    }
    if (db.engine === 'postgresql') {
      endpoints.poolerHost = h.poolerRw;
      endpoints.poolerHostRo = h.poolerRo;
    }
    const credentials = { username: appUserOf(db.shortId), password: await this.secretPassword(db, names(db.shortId).appSecret) };
    return { endpoints, credentials };
  }

  async sqlTarget(db: ClusterRef): Promise<SqlTarget> {
    return {
      engine: db.engine,
      host: this.hosts(db).rw,
      port: db.engine === 'postgresql' ? 5432 : 3306,
      user: CONSOLE_USER,
      password: await this.secretPassword(db, names(db.shortId).consoleSecret),
      database: db.shortId,
      // Reached at its service address: the managed roles admit the app user from the cluster's pods.
      app: { user: appUserOf(db.shortId), password: await this.secretPassword(db, names(db.shortId).appSecret) },
    };
  }

  // ---------- backups (kubernetes-backups.ts, kubernetes-bucket.ts) ----------

  async startBackup(db: ClusterRef, name: string, method: BackupMethod): Promise<void> {
    this.requireBucket();
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const [apiVersion, kind] = BACKUP_KIND[db.engine];
      if (await this.read(apiVersion, kind, backupObjectName(db.shortId, name), ns)) return;
      if (db.engine === 'postgresql') return this.createOnce(cnpgBackup(db, name, method));
      const cronName = names(db.shortId).mocoBackupCronJob;
      const cron = await this.read<CronJobObject & KubernetesObject>('batch/v1', 'CronJob', cronName, ns);
      if (!cron) {
        throw new ConflictError(`MOCO has not made the backup CronJob ${cronName} of the database yet; retry shortly`, 'database_not_running');
      }
      await this.createOnce(mocoBackupJob(db, name, method, cron));
    });
  }

  async listBackups(db: ClusterRef): Promise<RepositoryListing> {
    this.requireBucket();
    const ns = vpcNamespace(db.vpcId);
    const [apiVersion, kind] = BACKUP_KIND[db.engine];
    const [clusterVersion, clusterKind] = CLUSTER_KIND[db.engine];
    try {
      const [objects, cluster] = await this.guard(() =>
        Promise.all([
          this.listIn<BackupObject>(apiVersion, kind, ns, backupSelector(db.id)),
          this.read<BackedUpCluster & KubernetesObject>(clusterVersion, clusterKind, names(db.shortId).cluster, ns),
        ]),
      );
      return (db.engine === 'postgresql' ? cnpgListing : mocoListing)(objects, cluster, new Date());
    } catch (err) {
      // The kind not served: the operator is not installed, so nothing can be known of its backups.
      if (!isKubernetesNotFound(err)) throw err;
      return { readable: false, error: `the cluster does not serve ${kind} (${apiVersion})`, backups: [], archiving: false, archivedUntil: null };
    }
  }

  async deleteBackup(db: ClusterRef, backup: { name: string; ref: string | null }): Promise<void> {
    const { store, s3 } = this.requireBucket();
    const ns = vpcNamespace(db.vpcId);
    const objectName = backupObjectName(db.shortId, backup.name);
    const [apiVersion, kind] = BACKUP_KIND[db.engine];
    const object = await this.guard(() => this.read<BackupObject & KubernetesObject>(apiVersion, kind, objectName, ns));
    // The data first, then the object: the listing shows the backup until both are gone.
    if (db.engine === 'postgresql') {
      const backupId = backup.ref ?? object?.status?.backupId;
      if (backupId) await this.inBucket(() => deleteCnpgBackup(s3, store, db, backupId));
    } else {
      const span = mocoSpan(backup, object);
      if (span) await this.inBucket(() => deleteMocoBackups(s3, db, span.from, span.to));
    }
    await this.guard(() => this.remove(apiVersion, kind, objectName, ns));
  }

  async purgeBackups(db: ClusterRef): Promise<void> {
    // Without a store no backup was ever written: there is nothing to purge.
    if (!this.opts.backupStore) return;
    const { store, s3 } = this.requireBucket();
    await this.inBucket(() => purgeRepository(s3, store, db));
    const ns = vpcNamespace(db.vpcId);
    const [apiVersion, kind] = BACKUP_KIND[db.engine];
    await this.guard(async () => {
      let objects: KubernetesObject[];
      try {
        objects = await this.listIn<KubernetesObject>(apiVersion, kind, ns, backupSelector(db.id));
      } catch (err) {
        if (isKubernetesNotFound(err)) return;
        throw err;
      }
      for (const o of objects) await this.remove(apiVersion, kind, o.metadata!.name!, ns);
    });
  }

  async close(): Promise<void> {
    this.bucket?.s3.close();
    await Promise.all(this.watched?.map((w) => w.stop()) ?? []);
  }
}

/**
 * The span in which MOCO made a backup's folder: from its start (its name is its start
 * time, on Pier's clock; the Job's creation, on the cluster's) to its end (its ref, or the
 * Job's own end when the ref is not known yet).
 */
function mocoSpan(backup: { name: string; ref: string | null }, job: BackupObject | undefined): { from: Date; to: Date } | null {
  const starts = [mocoFolderTime(backup.name.slice(0, 15)), job?.metadata?.creationTimestamp ? new Date(job.metadata.creationTimestamp) : null];
  const from = starts.filter((d): d is Date => d !== null).sort((a, b) => a.getTime() - b.getTime())[0];
  const end = backup.ref ?? (job ? mocoListing([job], {}, new Date()).backups[0]?.ref : null);
  return from && end ? { from, to: new Date(end) } : null;
}
