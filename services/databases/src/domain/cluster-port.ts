// What the databases service needs from a cluster. Shaped after crossplane's managed
// resource contract: `observe` reports the live state, `apply` and `delete` converge and
// are idempotent, so a call repeated after a crash or a timeout does no harm. The domain
// defines it; cluster/docker.ts and cluster/kubernetes.ts implement it.
import type { Duplex } from 'node:stream';
import type { InstanceType } from '@pier/kit';
import type { ClusterCapabilities } from './capabilities.ts';
import type { Engine } from './database.ts';
import type { BackupMethod, BackupStatus } from './backup-records.ts';
import type { Observation } from './status.ts';

/** Everything an adapter needs to run one database. */
export interface ClusterDatabase {
  id: string;
  shortId: string;
  workspaceId: string;
  vpcId: string;
  engine: Engine;
  version: string;
  instanceType: InstanceType;
  storageGb: number;
  replicas: number;
  externalAccessEnabled: boolean;
  /** Allowlist CIDRs (normalised); empty means no restriction. */
  allowlist: string[];
  /**
   * Set on a database made from another's backup: its data comes from there when it is
   * first created (later applies change nothing of it).
   */
  restore: RestoreSpec | null;
}

export type ClusterRef = Pick<ClusterDatabase, 'id' | 'shortId' | 'vpcId' | 'engine'>;

export interface RestoreSpec {
  /** The database whose backup repository holds the backup (it may be deleted by now). */
  source: ClusterRef;
  backupName: string;
  /**
   * The repository's id of the backup to restore. Null with a target time: the backup
   * tool restores the newest backup that ended before it.
   */
  backupRef: string | null;
  /** postgresql: recover to this instant; null recovers to the end of the backup. */
  targetTime: Date | null;
}

/** One backup as the database's repository (and the server taking it) knows it. */
export interface RepositoryBackup {
  name: string;
  /** As recorded with the backup; null when the repository does not say. */
  method: BackupMethod | null;
  status: BackupStatus;
  /** The repository's own id (pgBackRest's label), for restores and deletes. */
  ref: string | null;
  sizeBytes: number | null;
  startedAt: Date;
  completedAt: Date | null;
  error: string | null;
}

export interface RepositoryListing {
  /**
   * False when the repository could not be read (a store out of reach, refused
   * credentials): `backups` is then empty and proves nothing.
   */
  readable: boolean;
  error?: string;
  backups: RepositoryBackup[];
  /**
   * postgresql: the server is up and its WAL archiving keeps up, so every instant until
   * now can be recovered once the archive is sealed (the SQL port's `sealArchive`).
   */
  archiving: boolean;
  /** postgresql: the last time a WAL segment reached the archive, when known. */
  archivedUntil: Date | null;
}

/** Where and as whom the control plane talks SQL to a database (console, schema, slow queries). */
export interface SqlTarget {
  engine: Engine;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /**
   * The database's own account, which SQL console statements log in as (never a
   * privileged login switching roles: a role set can be reset, a login cannot). `open`,
   * when given, is how to reach the server as it (see cluster/docker-tunnel.ts); else
   * `host:port`. `user`/`password` above are the control plane's login, for the schema
   * inspector, slow queries and sealing the archive.
   */
  app: { user: string; password: string; open?: () => Duplex };
}

/** Endpoints the cluster routes to one database. */
export interface Endpoints {
  host: string;
  port: number;
  readOnlyHost: string;
  /** postgresql only. */
  poolerHost?: string;
  poolerHostRo?: string;
  /** The port clients outside reach; 5432/3306 on kubernetes, the published port on docker. */
  externalPort?: number;
  /**
   * Where clients outside reach it without any DNS of ours: the host's address on docker,
   * the load balancer's once it has one on kubernetes. Used when no external domain is set.
   */
  externalAddress?: string;
  externalAddressRo?: string;
  /** Where reads from outside reach a replica, when it differs from `externalPort` (docker: replica 1's published port). */
  externalPortRo?: number;
}

export interface Credentials {
  username: string;
  password: string;
}

export interface DatabaseCluster {
  readonly capabilities: ClusterCapabilities;
  /**
   * Throws UnavailableError when the cluster cannot be reached. May say how it runs
   * databases (kubernetes: each engine's mode), which GET /readyz shows.
   */
  ping(): Promise<string | void>;
  /** Creates the database or converges it to `db` (size, external access, allowlist). */
  apply(db: ClusterDatabase): Promise<void>;
  /** Live state of the given databases of one VPC, in one call to the cluster. */
  observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>>;
  /** Removes everything the database runs on, data included. Idempotent. */
  delete(db: ClusterRef): Promise<void>;
  /**
   * Every database this installation has objects of in the cluster (containers, volumes,
   * custom resources), found by the installation label the adapter puts on all it
   * creates. Objects without that label are never listed, so they are never swept.
   */
  list(): Promise<ClusterRef[]>;
  /** Endpoints it routes and the live credentials, read from the cluster. */
  connection(db: ClusterDatabase): Promise<{ endpoints: Endpoints; credentials: Credentials }>;
  sqlTarget(db: ClusterRef): Promise<SqlTarget>;

  // Backups. Each database has a place of its own in the backup repository, which
  // outlives the database (a deleted database's backups are kept until purged).

  /** Starts a full backup named `name` in the background; starting the same name again does nothing. */
  startBackup(db: ClusterRef, name: string, method: BackupMethod): Promise<void>;
  /** The database's backups, finished and running, as its repository holds them. */
  listBackups(db: ClusterRef): Promise<RepositoryListing>;
  /** Removes one backup from the repository; one already gone is not an error. */
  deleteBackup(db: ClusterRef, backup: { name: string; ref: string | null }): Promise<void>;
  /** Deletes every backup and the archive of a database deleted past its retention. Idempotent. */
  purgeBackups(db: ClusterRef): Promise<void>;

  close(): Promise<void>;
}
