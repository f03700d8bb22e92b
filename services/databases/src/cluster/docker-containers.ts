import type Docker from 'dockerode';
import { dockerLimits, resourcesOf } from '@pier/kit';
import { appUserOf, type Engine } from '../domain/database.ts';
import type { ClusterDatabase, ClusterRef } from '../domain/cluster-port.ts';

// Names and container definitions of the docker adapter. One server container per
// database (plus a PgBouncer container for postgresql), on the VPC's network, with the
// data in a named volume. The host names mirror the kubernetes adapter's services.

export const ENGINE_PORT: Record<Engine, number> = { postgresql: 5432, mysql: 3306 };
const DATA_DIR: Record<Engine, string> = { postgresql: '/var/lib/postgresql/data', mysql: '/var/lib/mysql' };

export const serverName = (db: Pick<ClusterRef, 'id'>) => `pier-db-${db.id}`;
export const poolerName = (db: Pick<ClusterRef, 'id'>) => `pier-db-${db.id}-pooler`;
export const volumeName = (db: Pick<ClusterRef, 'id'>) => `pier-db-${db.id}`;

/** Host names inside the VPC network (network aliases). */
export function hostNames(shortId: string) {
  return {
    rw: `db-${shortId}-rw`,
    ro: `db-${shortId}-ro`,
    poolerRw: `db-${shortId}-pooler-rw`,
    poolerRo: `db-${shortId}-pooler-ro`,
  };
}

export interface ContainerSecrets {
  appPassword: string;
  consolePassword: string;
}

export interface ContainerSettings {
  image: string;
  network: string;
  publishAddress: string;
  labels: Record<string, string>;
  healthIntervalMs: number;
  /** The engine host's CPU count: Docker refuses a CPU limit above it. */
  hostCpus: number;
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

export function serverContainer(db: ClusterDatabase, secrets: ContainerSecrets, initialAccess: string, s: ContainerSettings): Docker.ContainerCreateOptions {
  const port = `${ENGINE_PORT[db.engine]}/tcp`;
  const names = hostNames(db.shortId);
  const user = appUserOf(db.shortId);
  const common = [
    `PIER_DB_NAME=${db.shortId}`,
    `PIER_APP_USER=${user}`,
    `PIER_APP_PASSWORD=${secrets.appPassword}`,
    `PIER_CONSOLE_PASSWORD=${secrets.consolePassword}`,
  ];
  const env =
    db.engine === 'postgresql'
      ? [...common, `PIER_HBA_B64=${Buffer.from(initialAccess).toString('base64')}`]
      : [...common, `PIER_ACCESS_B64=${Buffer.from(initialAccess).toString('base64')}`];
  const test =
    db.engine === 'postgresql'
      ? ['CMD', 'pg_isready', '-q', '-h', '127.0.0.1', '-p', '5432']
      : // Healthy once the init file has created the app user's accounts, not merely
        // when the server answers.
        ['CMD-SHELL', `mariadb --protocol=socket -uroot -N -e "SELECT 1 FROM mysql.global_priv WHERE User='${user}' LIMIT 1" | grep -q 1`];
  return {
    name: serverName(db),
    Image: s.image,
    Hostname: names.rw,
    Env: env,
    Labels: { ...s.labels, 'pier.component': 'server', 'pier.external': String(db.externalAccessEnabled) },
    ExposedPorts: { [port]: {} },
    Healthcheck: healthcheck(test, s.healthIntervalMs),
    HostConfig: {
      ...resources(db, s.hostCpus),
      Mounts: [{ Type: 'volume', Source: volumeName(db), Target: DATA_DIR[db.engine] }],
      RestartPolicy: { Name: 'unless-stopped' },
      NetworkMode: s.network,
      // External access = a port published on the host; docker picks a free one.
      PortBindings: db.externalAccessEnabled ? { [port]: [{ HostIp: s.publishAddress, HostPort: '' }] } : {},
      ShmSize: 128 * 1024 * 1024,
    },
    NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: [names.rw, names.ro] } } },
  };
}

export function poolerContainer(db: ClusterDatabase, secrets: ContainerSecrets, s: ContainerSettings): Docker.ContainerCreateOptions {
  const names = hostNames(db.shortId);
  const user = appUserOf(db.shortId);
  return {
    name: poolerName(db),
    Image: s.image,
    Cmd: ['pgbouncer'],
    Hostname: names.poolerRw,
    Env: [`PIER_POOLER_TARGET=${names.rw}`, `PIER_APP_USER=${user}`, `PIER_APP_PASSWORD=${secrets.appPassword}`, 'PIER_POOL_SIZE=20'],
    Labels: { ...s.labels, 'pier.component': 'pooler' },
    Healthcheck: healthcheck(['CMD', 'pg_isready', '-q', '-h', '127.0.0.1', '-p', '5432', '-U', user, '-d', db.shortId], s.healthIntervalMs),
    HostConfig: {
      Memory: 64 * 1024 * 1024,
      MemorySwap: 64 * 1024 * 1024,
      NanoCpus: 0.25e9,
      RestartPolicy: { Name: 'unless-stopped' },
      NetworkMode: s.network,
    },
    NetworkingConfig: { EndpointsConfig: { [s.network]: { Aliases: [names.poolerRw, names.poolerRo] } } },
  };
}
