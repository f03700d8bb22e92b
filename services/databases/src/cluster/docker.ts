import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { vpcNetwork, UnavailableError, ConflictError } from '@pier/kit';
import { ensureVpcNetwork, type VpcNetworkFacts } from '@pier/kit/docker';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import { appUserOf, CONSOLE_USER, shortIdOf, type Engine } from '../domain/database.ts';
import { renderPgHba, renderMysqlAccess, type AccessPolicy } from '../domain/access.ts';
import type { Observation } from '../domain/status.ts';
import { observeParts } from './docker-observe.ts';
import type { ClusterDatabase, ClusterRef, Credentials, DatabaseCluster, Endpoints, SqlTarget } from '../domain/cluster-port.ts';
import { envOf, exec, ignoreNotFound, statusCodeOf, translateDockerError } from './docker-engine.ts';
import {
  ENGINE_PORT,
  hostNames,
  poolerContainer,
  poolerName,
  resourceUpdate,
  resourcesDiffer,
  serverContainer,
  serverName,
  volumeName,
  type ContainerSecrets,
  type ContainerSettings,
} from './docker-containers.ts';

export interface DockerClusterOptions {
  docker?: Docker;
  /**
   * This installation's id, labelled `pier.installation` on every container and volume:
   * `list` (and so the sweep of orphans) sees only objects carrying it. Without it nothing
   * is labelled and `list` finds nothing.
   */
  installation?: string;
  /** Image of the postgresql engine (deploy/images/pg-managed). */
  postgresImage: string;
  /** Image of the mysql engine: MariaDB 10.11 (deploy/images/mariadb). */
  mysqlImage: string;
  /** Host address external-access ports are published on. */
  publishAddress: string;
  /** Extra labels on everything the adapter creates (tests mark theirs). */
  labels?: Record<string, string>;
  healthIntervalMs?: number;
}

/** The docker adapter runs one server per database: no read replicas yet. */
const CAPABILITIES: ClusterCapabilities = {
  adapter: 'docker',
  engines: {
    postgresql: { versions: ['15'], defaultVersion: '15', server: 'PostgreSQL', replicas: { min: 0, max: 0, default: 0 } },
    mysql: { versions: ['10.11'], defaultVersion: '10.11', server: 'MariaDB', replicas: { min: 1, max: 1, default: 1 } },
  },
  // The local volume driver has no size limit: storage_gb is recorded, not enforced.
  enforcesStorage: false,
};

const password = () => randomBytes(24).toString('hex');

/** The address a client on this host dials for a port published on `publishAddress`. */
function reachableAddress(publishAddress: string): string {
  return publishAddress === '0.0.0.0' || publishAddress === '::' ? '127.0.0.1' : publishAddress;
}

const INSTALLATION_LABEL = 'pier.installation';

export class DockerCluster implements DatabaseCluster {
  readonly capabilities = CAPABILITIES;
  private readonly docker: Docker;

  constructor(private readonly opts: DockerClusterOptions) {
    this.docker = opts.docker ?? new Docker();
  }

  private labels(db: ClusterRef & { workspaceId?: string }): Record<string, string> {
    return {
      ...this.opts.labels,
      'pier.managed': 'true',
      'pier.service': 'databases',
      'pier.database': db.id,
      'pier.vpc': db.vpcId,
      'pier.engine': db.engine,
      ...(db.workspaceId ? { 'pier.workspace': db.workspaceId } : {}),
      ...(this.opts.installation ? { [INSTALLATION_LABEL]: this.opts.installation } : {}),
    };
  }

  private cpus?: number;

  private async hostCpus(): Promise<number> {
    this.cpus ??= ((await this.docker.info()) as { NCPU?: number }).NCPU ?? 1;
    return this.cpus;
  }

  private settings(db: ClusterDatabase, hostCpus: number): ContainerSettings {
    return {
      hostCpus,
      image: db.engine === 'postgresql' ? this.opts.postgresImage : this.opts.mysqlImage,
      network: vpcNetwork(db.vpcId),
      publishAddress: this.opts.publishAddress,
      labels: this.labels(db),
      healthIntervalMs: this.opts.healthIntervalMs ?? 1000,
    };
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      return translateDockerError(err);
    }
  }

  async ping(): Promise<void> {
    await this.guard(() => this.docker.ping());
  }

  private policy(db: ClusterDatabase, net: VpcNetworkFacts): AccessPolicy {
    return {
      engine: db.engine,
      database: db.shortId,
      appUser: appUserOf(db.shortId),
      vpcNetworks: net.subnets,
      // The control plane runs on the docker host: its connections to a container's
      // address come from the network's gateway.
      controlPlane: net.gateways.map((g) => `${g}/32`),
      hostAddresses: net.gateways.map((g) => `${g}/32`),
      externalAccess: db.externalAccessEnabled,
      rules: db.allowlist,
    };
  }

  private renderAccess(db: ClusterDatabase, net: VpcNetworkFacts, secrets: ContainerSecrets): string {
    const policy = this.policy(db, net);
    return db.engine === 'postgresql' ? renderPgHba(policy) : renderMysqlAccess(policy, { app: secrets.appPassword, console: secrets.consolePassword });
  }

  async apply(db: ClusterDatabase): Promise<void> {
    await this.guard(async () => {
      const net = await ensureVpcNetwork(this.docker, db.vpcId, { 'pier.managed': 'true', 'pier.vpc': db.vpcId });
      const settings = this.settings(db, await this.hostCpus());
      const existing = await ignoreNotFound(this.docker.getContainer(serverName(db)).inspect());
      let secrets: ContainerSecrets;
      let pushAccess = true;
      if (!existing) {
        secrets = { appPassword: password(), consolePassword: password() };
        await this.docker.createVolume({ Name: volumeName(db), Labels: this.labels(db) });
        await this.createAndStart(serverContainer(db, secrets, this.renderAccess(db, net, secrets), settings));
        pushAccess = false; // the new container starts with the current rules in its env
      } else {
        const env = envOf(existing);
        secrets = { appPassword: env.PIER_APP_PASSWORD ?? password(), consolePassword: env.PIER_CONSOLE_PASSWORD ?? password() };
        if (existing.Config.Labels?.['pier.external'] !== String(db.externalAccessEnabled)) {
          // Published ports are fixed at creation: publishing or withdrawing one means a
          // new container around the same volume and credentials.
          await this.stopAndRemove(existing.Id);
          await this.createAndStart(serverContainer(db, secrets, this.renderAccess(db, net, secrets), settings));
          // The change is done when the new server accepts connections again; the
          // status stays `running` meanwhile, so the caller is answered only then.
          await this.waitHealthy(serverName(db), 60_000);
        } else {
          if (resourcesDiffer(existing, db, settings.hostCpus)) {
            await this.docker.getContainer(existing.Id).update(resourceUpdate(db, settings.hostCpus));
          }
          if (!existing.State.Running) await this.docker.getContainer(existing.Id).start();
        }
      }
      if (db.engine === 'postgresql') await this.ensurePooler(db, secrets, settings);
      if (pushAccess) await this.pushAccess(db, this.renderAccess(db, net, secrets));
    });
  }

  /** Waits for a container's health check to pass; gives up quietly (status resync reports it). */
  private async waitHealthy(name: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const info = await ignoreNotFound(this.docker.getContainer(name).inspect());
      const health = info?.State.Health?.Status;
      if (!info || health === 'healthy' || health === 'unhealthy' || !info.State.Running) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** A clean shutdown first: a killed server would have to recover its WAL on restart. */
  private async stopAndRemove(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).stop({ t: 30 });
    } catch (err) {
      if (statusCodeOf(err) !== 304 && statusCodeOf(err) !== 404) throw err;
    }
    await ignoreNotFound(this.docker.getContainer(id).remove({ force: true }));
  }

  private async createAndStart(spec: Docker.ContainerCreateOptions): Promise<void> {
    const container = await this.docker.createContainer(spec);
    await container.start();
  }

  private async ensurePooler(db: ClusterDatabase, secrets: ContainerSecrets, settings: ContainerSettings): Promise<void> {
    const existing = await ignoreNotFound(this.docker.getContainer(poolerName(db)).inspect());
    if (!existing) await this.createAndStart(poolerContainer(db, secrets, settings));
    else if (!existing.State.Running) await this.docker.getContainer(existing.Id).start();
  }

  private async pushAccess(db: ClusterDatabase, content: string): Promise<void> {
    let result;
    try {
      result = await exec(this.docker, serverName(db), ['pier-access', Buffer.from(content).toString('base64')]);
    } catch (err) {
      // 409: the container stopped (or restart-loops) between our start and the exec.
      if (statusCodeOf(err) === 409) throw new ConflictError('the database server is not running; retry once it is', 'database_not_running');
      throw err;
    }
    if (result.exitCode !== 0) {
      throw new UnavailableError(`applying access rules failed: ${result.stderr.trim() || `exit ${result.exitCode}`}`, 'cluster_unavailable');
    }
  }

  async observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>> {
    const containers = await this.guard(() => this.docker.listContainers({ all: true, filters: { label: ['pier.service=databases', `pier.vpc=${vpcId}`] } }));
    const byDb = new Map<string, Docker.ContainerInfo[]>();
    for (const c of containers) {
      const id = c.Labels['pier.database'];
      if (id) byDb.set(id, [...(byDb.get(id) ?? []), c]);
    }
    const out = new Map<string, Observation>();
    for (const id of ids) {
      const parts = byDb.get(id) ?? [];
      out.set(id, observeParts(parts));
    }
    return out;
  }

  async delete(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      for (const name of [poolerName(db), serverName(db)]) {
        await ignoreNotFound(this.docker.getContainer(name).remove({ force: true, v: true }));
      }
      try {
        await ignoreNotFound(this.docker.getVolume(volumeName(db)).remove());
      } catch (err) {
        // A container being removed still holds the volume for a moment.
        if (statusCodeOf(err) !== 409) throw err;
        await new Promise((r) => setTimeout(r, 500));
        await ignoreNotFound(this.docker.getVolume(volumeName(db)).remove());
      }
    });
  }

  async list(): Promise<ClusterRef[]> {
    const installation = this.opts.installation;
    if (!installation) return [];
    const label = ['pier.service=databases', `${INSTALLATION_LABEL}=${installation}`];
    const [containers, volumes] = await this.guard(() =>
      Promise.all([this.docker.listContainers({ all: true, filters: { label } }), this.docker.listVolumes({ filters: { label } })]),
    );
    const refs = new Map<string, ClusterRef>();
    // A volume without its container is what a crash between the two creations leaves.
    for (const labels of [...containers.map((c) => c.Labels), ...(volumes.Volumes ?? []).map((v) => v.Labels ?? {})]) {
      const id = labels['pier.database'];
      const vpcId = labels['pier.vpc'];
      const engine = labels['pier.engine'];
      if (!id || !vpcId || (engine !== 'postgresql' && engine !== 'mysql') || labels[INSTALLATION_LABEL] !== installation) continue;
      refs.set(id, { id, shortId: shortIdOf(id), vpcId, engine });
    }
    return [...refs.values()];
  }

  private async server(db: ClusterRef): Promise<Docker.ContainerInspectInfo> {
    const info = await this.guard(() => ignoreNotFound(this.docker.getContainer(serverName(db)).inspect()));
    if (!info) throw new ConflictError('the database has no server in the cluster', 'database_unavailable');
    return info;
  }

  async connection(db: ClusterDatabase): Promise<{ endpoints: Endpoints; credentials: Credentials }> {
    const info = await this.server(db);
    const env = envOf(info);
    const names = hostNames(db.shortId);
    const port = ENGINE_PORT[db.engine];
    const published = (info.NetworkSettings.Ports?.[`${port}/tcp`] ?? []).find((b) => b.HostPort)?.HostPort;
    const endpoints: Endpoints = {
      host: names.rw,
      port,
      // A single server on docker: the read-only name is an alias of the same server.
      readOnlyHost: names.ro,
      externalPort: published ? Number(published) : undefined,
      externalAddress: published ? reachableAddress(this.opts.publishAddress) : undefined,
    };
    if (db.engine === 'postgresql') {
      endpoints.poolerHost = names.poolerRw;
      endpoints.poolerHostRo = names.poolerRo;
    }
    return { endpoints, credentials: { username: appUserOf(db.shortId), password: env.PIER_APP_PASSWORD ?? '' } };
  }

  async sqlTarget(db: ClusterRef): Promise<SqlTarget> {
    const info = await this.server(db);
    const ip = info.NetworkSettings.Networks?.[vpcNetwork(db.vpcId)]?.IPAddress;
    if (!info.State.Running || !ip) throw new UnavailableError('the database server is not running', 'database_unavailable');
    return {
      engine: db.engine,
      host: ip,
      port: ENGINE_PORT[db.engine as Engine],
      user: CONSOLE_USER,
      password: envOf(info).PIER_CONSOLE_PASSWORD ?? '',
      database: db.shortId,
      runAs: db.engine === 'postgresql' ? appUserOf(db.shortId) : undefined,
    };
  }

  async close(): Promise<void> {}
}
