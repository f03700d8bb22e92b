import type Docker from 'dockerode';
import { dockerLimits, resourcesOf } from '@pier/kit';
import { appUserOf, type Engine } from '../domain/database.ts';
import type { ClusterDatabase, ClusterRef } from '../domain/cluster-port.ts';
import { repositoryEnv, repositoryMounts, restoreEnv, restoreMounts, RESTORE_SOURCE_LABEL, type BackupRepository } from './docker-repository.ts';

// Names and container definitions of the docker adapter. One server container per
// database, its replicas (each a server container of its own), and for postgresql
// PgBouncer containers, all on the VPC's network, each server with its data in a named
// volume. The host names mirror the kubernetes adapter's services.

export const ENGINE_PORT: Record<Engine, number> = { postgresql: 5432, mysql: 3306 };
const DATA_DIR: Record<Engine, string> = { postgresql: '/var/lib/postgresql/data', mysql: '/var/lib/mysql' };

export const serverName = (db: Pick<ClusterRef, 'id'>) => `pier-db-${db.id}`;
export const poolerName = (db: Pick<ClusterRef, 'id'>, target: PoolerTarget = 'rw') => `pier-db-${db.id}-pooler${target === 'rw' ? '' : '-ro'}`;
export const volumeName = (db: Pick<ClusterRef, 'id'>) => `pier-db-${db.id}`;
/** Replica `n` (from 1): its container and its volume. */
export const replicaName = (db: Pick<ClusterRef, 'id'>, n: number) => `pier-db-${db.id}-replica-${n}`;

/** The replica servers a database runs: postgresql's read replicas; for mysql, every instance but the primary. */
export function replicaCount(db: Pick<ClusterDatabase, 'engine' | 'replicas'>): number {
  return db.engine === 'mysql' ? Math.max(0, db.replicas - 1) : db.replicas;
}

/**
 * Host names inside the VPC network (network aliases). `ro` is shared by the replicas
 * (Docker's DNS answers with all of them, so reads spread); with none, read-only clients
 * are given `rw`. The primary never carries `ro`: a read-only client must never land
 * where it could write.
 */
export function hostNames(shortId: string) {
  return {
    rw: `db-${shortId}-rw`,
    ro: `db-${shortId}-ro`,
    replica: (n: number) => `db-${shortId}-replica-${n}`,
    poolerRw: `db-${shortId}-pooler-rw`,
    poolerRo: `db-${shortId}-pooler-ro`,
  };
}

export type PoolerTarget = 'rw' | 'ro';

export interface ContainerSecrets {
  appPassword: string;
  consolePassword: string;
  /** The replicas' login to the primary (pier_replicator). */
  replicationPassword: string;
}

export interface ContainerSettings {
  image: string;
  network: string;
  /** Host address external-access ports are published on; null: none is (Pier's SNI listener is the way in). */
  publishAddress: string | null;
  labels: Record<string, string>;
  healthIntervalMs: number;
  /** The engine host's CPU count: Docker refuses a CPU limit above it. */
  hostCpus: number;
  repository: BackupRepository;
  /** A restored database whose data is already in its volume: its source is not mounted again. */
  restored?: boolean;
}

function resources(db: ClusterDatabase, hostCpus: number): { Memory: number; MemorySwap: number; NanoCpus: number } {
  return dockerLimits(resourcesOf(db.instanceType), hostCpus);
}

export function resourcesDiffer(info: Docker.ContainerInspectInfo, db: ClusterDatabase, hostCpus: number): boolean {
  const want = resources(db, hostCpus);
  return info.HostConfig.Memory !== want.Memory || info.HostConfig.NanoCpus !== want.NanoCpus;
}

export function resourceUpdate(db: ClusterDatabase, hostCpus: number) {
  return resources(db, hostCpus);
}

function healthcheck(test: string[], intervalMs: number) {
  const ns = intervalMs * 1e6;
  // No start_interval before Engine API 1.44: the interval is short so `running` shows
  // soon after the server accepts connections; start_period keeps initdb from counting.
  return { Test: test, Interval: ns, Timeout: 5e9, Retries: 3, StartPeriod: 300e9 };
}

/**
 * The servers' health check is the image's `pier-health`: accepting connections (mysql:
 * once the init file has created the app user's accounts; a replica: once it follows the
 * primary). What it prints says why not (`starting: ...`, `failed: ...`): see docker-observe.ts.
 */
const SERVER_HEALTH = ['CMD', 'pier-health'];

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** A server's limits, data volume and restart policy; a primary also mounts the backup repository (replicas archive nothing). */
function serverHostConfig(db: ClusterDatabase, volume: string, s: ContainerSettings, withRepository: boolean): Docker.HostConfig {
  return {
    ...resources(db, s.hostCpus),
    Mounts: [
      { Type: 'volume', Source: volume, Target: DATA_DIR[db.engine] },
      ...(withRepository ? repositoryMounts(s.repository, db.engine, db.id) : []),
      // Only a restore's first start reads its source; a restored server is recreated without it.
      ...(withRepository && db.restore && !s.restored ? restoreMounts(s.repository, db.restore) : []),
    ],
    RestartPolicy: { Name: 'unless-stopped' },
    NetworkMode: s.network,
    ShmSize: 128 * 1024 * 1024,
  };
}

export function serverContainer(db: ClusterDatabase, secrets: ContainerSecrets, initialAccess: string, s: ContainerSettings): Docker.ContainerCreateOptions {
  const port = `${ENGINE_PORT[db.engine]}/tcp`;
  const names = hostNames(db.shortId);
  const env = [
    `PIER_DB_NAME=${db.shortId}`,
    `PIER_APP_USER=${appUserOf(db.shortId)}`,
    `PIER_APP_PASSWORD=${secrets.appPassword}`,
    `PIER_CONSOLE_PASSWORD=${secrets.consolePassword}`,
    `PIER_REPLICATION_PASSWORD=${secrets.replicationPassword}`,
    db.engine === 'postgresql' ? `PIER_HBA_B64=${b64(initialAccess)}` : `PIER_ACCESS_B64=${b64(initialAccess)}`,
    ...repositoryEnv(s.repository, db.engine, db.id),
    ...(db.restore ? restoreEnv(s.repository, db.restore) : []),
  ];
  return {
    name: serverName(db),
    Image: s.image,
    Hostname: names.rw,
    Cmd: [db.engine === 'postgresql' ? 'postgres' : 'mariadbd'],
    Env: env,
    Labels: {
      ...s.labels,
      'pier.component': 'server',
      'pier.external': String(serverPublished(db, s)),
      ...(db.restore && !s.restored && s.repository.kind === 'volume' ? { [RESTORE_SOURCE_LABEL]: db.restore.source.id } : {}),
    },
    ExposedPorts: { [port]: {} },
    Healthcheck: healthcheck(SERVER_HEALTH, s.healthIntervalMs),
    HostConfig: {
      ...serverHostConfig(db, volumeName(db), s, true),
      // External access = a port published on the host; docker picks a free one.
      PortBindings: serverPublished(db, s) ? { [port]: [{ HostIp: s.publishAddress!, HostPort: '' }] } : {},
    },
    NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: [names.rw] } } },
  };
}

/**
 * Replica `n`: a server of the same instance type following the primary (postgresql: a
 * hot standby cloned with pg_basebackup over a replication slot of its own; mysql: seeded
 * from a dump of the primary, then GTID replication, read-only).
 */
export function replicaContainer(
  db: ClusterDatabase,
  n: number,
  secrets: ContainerSecrets,
  initialAccess: string,
  s: ContainerSettings,
): Docker.ContainerCreateOptions {
  const names = hostNames(db.shortId);
  const port = `${ENGINE_PORT[db.engine]}/tcp`;
  const env = [
    `PIER_PRIMARY_HOST=${names.rw}`,
    `PIER_REPLICATION_PASSWORD=${secrets.replicationPassword}`,
    `PIER_DB_NAME=${db.shortId}`,
    ...(db.engine === 'postgresql'
      ? [`PIER_REPLICA_SLOT=${replicaSlot(n)}`, `PIER_HBA_B64=${b64(initialAccess)}`]
      : // The primary's server id is 1.
        [`PIER_SERVER_ID=${n + 1}`]),
  ];
  return {
    name: replicaName(db, n),
    Image: s.image,
    Hostname: names.replica(n),
    Cmd: ['replica'],
    Env: env,
    Labels: { ...s.labels, 'pier.component': 'replica', 'pier.replica': String(n), 'pier.external': String(replicaPublished(db, n, s)) },
    ExposedPorts: { [port]: {} },
    Healthcheck: healthcheck(SERVER_HEALTH, s.healthIntervalMs),
    HostConfig: {
      ...serverHostConfig(db, replicaName(db, n), s, false),
      PortBindings: replicaPublished(db, n, s) ? { [port]: [{ HostIp: s.publishAddress!, HostPort: '' }] } : {},
    },
    NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: [names.ro, names.replica(n)] } } },
  };
}

/** With external access on, the server publishes its port (unless the SNI listener is the way in). */
export const serverPublished = (db: Pick<ClusterDatabase, 'externalAccessEnabled'>, s: Pick<ContainerSettings, 'publishAddress'>) =>
  db.externalAccessEnabled && s.publishAddress !== null;

/**
 * Replica 1 publishes its port too: `external_host_ro` reads from it, as `read_only_host`
 * does inside the VPC (the others serve that name alone).
 */
export const replicaPublished = (db: Pick<ClusterDatabase, 'externalAccessEnabled'>, n: number, s: Pick<ContainerSettings, 'publishAddress'>) =>
  serverPublished(db, s) && n === 1;

/** postgresql: the replication slot the primary keeps for replica `n`. */
export const replicaSlot = (n: number) => `replica_${n}`;

/** A PgBouncer in front of the primary (`rw`) or of the replicas (`ro`, only while there are some). */
export function poolerContainer(db: ClusterDatabase, target: PoolerTarget, secrets: ContainerSecrets, s: ContainerSettings): Docker.ContainerCreateOptions {
  const names = hostNames(db.shortId);
  const user = appUserOf(db.shortId);
  const alias = target === 'rw' ? names.poolerRw : names.poolerRo;
  return {
    name: poolerName(db, target),
    Image: s.image,
    Cmd: ['pgbouncer'],
    Hostname: alias,
    Env: [
      `PIER_POOLER_TARGET=${target === 'rw' ? names.rw : names.ro}`,
      `PIER_APP_USER=${user}`,
      `PIER_APP_PASSWORD=${secrets.appPassword}`,
      'PIER_POOL_SIZE=20',
    ],
    Labels: { ...s.labels, 'pier.component': 'pooler', 'pier.pooler': target },
    Healthcheck: healthcheck(['CMD', 'pg_isready', '-q', '-h', '127.0.0.1', '-p', '5432', '-U', user, '-d', db.shortId], s.healthIntervalMs),
    HostConfig: {
      Memory: 64 * 1024 * 1024,
      MemorySwap: 64 * 1024 * 1024,
      NanoCpus: 0.25e9,
      RestartPolicy: { Name: 'unless-stopped' },
      NetworkMode: s.network,
    },
    NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: [alias] } } },
  };
}

/**
 * A one-off container of the engine's image with the database's repository, for backup
 * work when its server is not running (or gone: a deleted database's backups).
 */
export function helperContainer(
  engine: Engine,
  databaseId: string,
  cmd: string[],
  s: Pick<ContainerSettings, 'image' | 'labels' | 'repository'>,
): Docker.ContainerCreateOptions {
  return {
    Image: s.image,
    Cmd: cmd,
    Env: repositoryEnv(s.repository, engine, databaseId),
    Labels: { ...s.labels, 'pier.component': 'backup-helper' },
    HostConfig: {
      Mounts: repositoryMounts(s.repository, engine, databaseId),
      Memory: 256 * 1024 * 1024,
      NanoCpus: 0.5e9,
    },
  };
}

/**
 * A container as it was created, minus one volume mount and one label: what a restored
 * server is recreated as once its source's repository is no longer needed.
 */
export function recreationWithout(info: Docker.ContainerInspectInfo, volume: string, label: string): Docker.ContainerCreateOptions {
  const labels = Object.fromEntries(Object.entries(info.Config.Labels ?? {}).filter(([k]) => k !== label));
  const network = info.HostConfig.NetworkMode!;
  const h = info.HostConfig;
  return {
    name: info.Name.replace(/^\//, ''),
    Image: info.Config.Image,
    Cmd: info.Config.Cmd,
    Env: info.Config.Env,
    Labels: labels,
    Hostname: info.Config.Hostname,
    ExposedPorts: info.Config.ExposedPorts,
    Healthcheck: info.Config.Healthcheck,
    HostConfig: {
      Memory: h.Memory,
      MemorySwap: h.MemorySwap,
      NanoCpus: h.NanoCpus,
      RestartPolicy: h.RestartPolicy,
      NetworkMode: network,
      ShmSize: h.ShmSize,
      PortBindings: h.PortBindings,
      Mounts: (h.Mounts ?? []).filter((m) => m.Source !== volume),
    },
    // Our aliases all start with `db-` (Docker adds the container's id of its own).
    NetworkingConfig: {
      EndpointsConfig: { [network]: { Aliases: (info.NetworkSettings.Networks?.[network]?.Aliases ?? []).filter((a: string) => a.startsWith('db-')) } },
    },
  };
}
