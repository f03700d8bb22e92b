import Docker from 'dockerode';
import { randomBytes } from 'node:crypto';
import { vpcNetwork, UnavailableError, ConflictError, dockerStatusOf } from '@pier/kit';
import { ensureVpcNetwork, type VpcNetworkFacts } from '@pier/kit/docker';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import { appUserOf, CONSOLE_USER, shortIdOf, type Engine } from '../domain/database.ts';
import type { BackupMethod } from '../domain/backup-records.ts';
import { renderPgHba, renderMysqlAccess, type AccessPolicy } from '../domain/access.ts';
import type { Observation } from '../domain/status.ts';
import { lastHealthOutput, needsHealthOutput, observeParts } from './docker-observe.ts';
import { parseMysqlListing, parsePostgresListing } from './docker-backups.ts';
import { BACKUPS_OF_LABEL, REPOSITORY_OWNER, RESTORE_SOURCE_LABEL, repositoryVolumeName, type BackupRepository } from './docker-repository.ts';
import { ExecTunnel } from './docker-tunnel.ts';
import type { ClusterDatabase, ClusterRef, Credentials, DatabaseCluster, Endpoints, RepositoryListing, SqlTarget } from '../domain/cluster-port.ts';
import { envOf, exec, ignoreNotFound, runToEnd, translateDockerError, type ExecResult } from './docker-engine.ts';
import {
  ENGINE_PORT,
  helperContainer,
  recreationWithout,
  hostNames,
  poolerContainer,
  poolerName,
  replicaContainer,
  replicaCount,
  replicaPublished,
  serverPublished,
  replicaName,
  replicaSlot,
  resourceUpdate,
  resourcesDiffer,
  serverContainer,
  serverName,
  volumeName,
  type ContainerSecrets,
  type ContainerSettings,
  type PoolerTarget,
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
  /**
   * PostgreSQL's external endpoint is Pier's SNI listener (edge/postgres-listener.ts,
   * started with an external domain): its servers publish no port, and their pg_hba admits
   * the app user from the host, where the listener connects from once it judged the
   * allowlist. Its port is set once it listens (`postgresListenerPort`).
   */
  postgresListener?: boolean;
  /** Extra labels on everything the adapter creates (tests mark theirs). */
  labels?: Record<string, string>;
  healthIntervalMs?: number;
  /** Where backups and the WAL / binary-log archive go: a named volume or an S3 store. */
  repository: BackupRepository;
}

/** Read replicas are servers on the one machine: a few, each of the primary's size. */
const CAPABILITIES: ClusterCapabilities = {
  adapter: 'docker',
  engines: {
    postgresql: { versions: ['15'], defaultVersion: '15', server: 'PostgreSQL', replicas: { min: 0, max: 5, default: 0, shrinks: true } },
    mysql: { versions: ['10.11'], defaultVersion: '10.11', server: 'MariaDB', replicas: { min: 1, max: 5, default: 1, shrinks: true } },
  },
  // The local volume driver has no size limit: storage_gb is recorded, not enforced.
  enforcesStorage: false,
};

const password = () => randomBytes(24).toString('hex');

/** The address a client on this host dials for a port published on `publishAddress`. */
function reachableAddress(publishAddress: string): string {
  return publishAddress === '0.0.0.0' || publishAddress === '::' ? '127.0.0.1' : publishAddress;
}

/** The host port a container's `port` is published on, if any. */
function publishedPort(info: Docker.ContainerInspectInfo, port: number): number | undefined {
  const bound = (info.NetworkSettings.Ports?.[`${port}/tcp`] ?? []).find((b) => b.HostPort)?.HostPort;
  return bound ? Number(bound) : undefined;
}

const INSTALLATION_LABEL = 'pier.installation';

/** A command's result, or its failure as the cluster failing (503), in the command's last words. */
function succeeded(result: ExecResult, what: string): ExecResult {
  if (result.exitCode === 0) return result;
  const said = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
  throw new UnavailableError(`${what} failed: ${said || `exit ${result.exitCode}`}`, 'cluster_unavailable');
}

export class DockerCluster implements DatabaseCluster {
  readonly capabilities = CAPABILITIES;
  private readonly docker: Docker;

  /** Where Pier's PostgreSQL SNI listener listens, once it does (`postgresListener`). */
  postgresListenerPort: number | null = null;

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

  /** Whether PostgreSQL's clients outside come through Pier's SNI listener (listener-wiring.ts starts it). */
  get listensForPostgres(): boolean {
    return this.opts.postgresListener === true;
  }

  /** Whether clients outside reach this engine's databases through Pier's SNI listener. */
  private listens(engine: Engine): boolean {
    return engine === 'postgresql' && this.listensForPostgres;
  }

  private image(engine: Engine): string {
    return engine === 'postgresql' ? this.opts.postgresImage : this.opts.mysqlImage;
  }

  private settings(db: ClusterDatabase, hostCpus: number): ContainerSettings {
    return {
      hostCpus,
      image: this.image(db.engine),
      network: vpcNetwork(db.vpcId),
      publishAddress: this.listens(db.engine) ? null : this.opts.publishAddress,
      labels: this.labels(db),
      healthIntervalMs: this.opts.healthIntervalMs ?? 1000,
      repository: this.opts.repository,
    };
  }

  /** Labels of what belongs to no one database (the repository volume, helper containers). */
  private sharedLabels(component: string): Record<string, string> {
    return { ...this.opts.labels, 'pier.managed': 'true', 'pier.service': 'databases', 'pier.component': component };
  }

  /**
   * Database `databaseId`'s own repository volume. `fresh`: a database being created,
   * which cannot have backups yet. Otherwise what it left in the repository volume that
   * every database used to share (`PIER_DATABASES_BACKUP_VOLUME`, a directory each) is
   * moved into its own, once, by a one-off container that runs no tenant code. Called
   * only while no server of the database runs with the shared volume.
   */
  private async ensureRepository(engine: Engine, databaseId: string, fresh: boolean): Promise<void> {
    const repo = this.opts.repository;
    if (repo.kind !== 'volume') return;
    const name = repositoryVolumeName(databaseId);
    // A move goes through a volume of its own first: Docker cannot rename one, and a move
    // cut short (a crash) is resumed from whatever it left, never taken as done.
    const moving = `${name}-moving`;
    const [own, pending] = await Promise.all([this.docker.getVolume(name).inspect(), this.docker.getVolume(moving).inspect()].map(ignoreNotFound));
    if (own && !pending) return;
    const labels = { ...this.sharedLabels('backup-repository'), [BACKUPS_OF_LABEL]: databaseId };
    if (!pending) {
      const shared = !fresh && (await ignoreNotFound(this.docker.getVolume(repo.volume).inspect()));
      if (!shared) {
        await this.docker.createVolume({ Name: name, Labels: labels });
        return;
      }
      await this.docker.createVolume({ Name: moving, Labels: labels });
    }
    const dir = `/shared/${databaseId}`;
    await this.helper(engine, 'moving the backups into their own volume', `[ ! -d ${dir} ] || { cp -a ${dir}/. /own/ && rm -rf ${dir}; }`, {
      [repo.volume]: '/shared',
      [moving]: '/own',
    });
    await this.docker.createVolume({ Name: name, Labels: labels });
    await this.helper(engine, 'moving the backups into their own volume', `cp -a /from/. /to/ && chown ${REPOSITORY_OWNER[engine]} /to`, {
      [moving]: '/from',
      [name]: '/to',
    });
    await this.removeVolume(moving);
  }

  /** A shell script in a one-off container of the engine's image with `volumes` mounted; a failure is a 503. */
  private async helper(engine: Engine, what: string, script: string, volumes: Record<string, string>): Promise<void> {
    const result = await runToEnd(this.docker, {
      Image: this.image(engine),
      Cmd: ['sh', '-c', script],
      Labels: this.sharedLabels('backup-helper'),
      HostConfig: { Mounts: Object.entries(volumes).map(([Source, Target]) => ({ Type: 'volume' as const, Source, Target })) },
    });
    succeeded(result, what);
  }

  /** Whether a server still mounts what it must not: the volume every database used to share. */
  private mountsSharedRepository(info: Docker.ContainerInspectInfo): boolean {
    const repo = this.opts.repository;
    return repo.kind === 'volume' && (info.Mounts ?? []).some((m) => m.Name === repo.volume);
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
      externalListener: this.listens(db.engine),
    };
  }

  private renderAccess(db: ClusterDatabase, net: VpcNetworkFacts, secrets: ContainerSecrets): string {
    const policy = this.policy(db, net);
    return db.engine === 'postgresql'
      ? renderPgHba(policy)
      : renderMysqlAccess(policy, { app: secrets.appPassword, console: secrets.consolePassword, replication: secrets.replicationPassword });
  }

  /** The containers the adapter runs for one database (server, replicas, poolers). */
  private parts(db: Pick<ClusterRef, 'id'>): Promise<Docker.ContainerInfo[]> {
    return this.docker.listContainers({ all: true, filters: { label: ['pier.service=databases', `pier.database=${db.id}`] } });
  }

  async apply(db: ClusterDatabase): Promise<void> {
    await this.guard(async () => {
      const net = await ensureVpcNetwork(this.docker, db.vpcId, { 'pier.managed': 'true', 'pier.vpc': db.vpcId });
      const settings = this.settings(db, await this.hostCpus());
      const existing = await ignoreNotFound(this.docker.getContainer(serverName(db)).inspect());
      let secrets: ContainerSecrets;
      let pushAccess = true;
      if (!existing) {
        // A data volume already there: not a new database (its server was lost), so it may have backups to move.
        const fresh = !(await ignoreNotFound(this.docker.getVolume(volumeName(db)).inspect()));
        await this.ensureRepository(db.engine, db.id, fresh);
        if (db.restore) await this.ensureRepository(db.restore.source.engine, db.restore.source.id, false);
        secrets = { appPassword: password(), consolePassword: password(), replicationPassword: password() };
        await this.docker.createVolume({ Name: volumeName(db), Labels: this.labels(db) });
        await this.createAndStart(serverContainer(db, secrets, this.renderAccess(db, net, secrets), settings));
        pushAccess = false; // the new container starts with the current rules in its env
      } else {
        const env = envOf(existing);
        secrets = {
          appPassword: env.PIER_APP_PASSWORD ?? password(),
          consolePassword: env.PIER_CONSOLE_PASSWORD ?? password(),
          replicationPassword: env.PIER_REPLICATION_PASSWORD ?? password(),
        };
        const shared = this.mountsSharedRepository(existing);
        if (existing.Config.Labels?.['pier.external'] !== String(serverPublished(db, settings)) || shared) {
          // Published ports and mounts are fixed at creation: publishing or withdrawing one
          // (or a server made when every database mounted the one repository volume) means
          // a new container around the same volume and credentials.
          await this.stopAndRemove(existing.Id);
          // Stopped, it archives nothing more: what it left in the shared volume can move.
          if (shared) await this.ensureRepository(db.engine, db.id, false);
          const restored = !existing.Config.Labels?.[RESTORE_SOURCE_LABEL];
          await this.createAndStart(serverContainer(db, secrets, this.renderAccess(db, net, secrets), { ...settings, restored }));
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
      const access = this.renderAccess(db, net, secrets);
      if (pushAccess) await this.pushAccess(serverName(db), access);
      await this.ensureReplicas(db, secrets, access, settings, pushAccess);
      if (db.engine === 'postgresql') {
        await this.ensurePooler(db, 'rw', secrets, settings);
        // Read-only pooling only where there are replicas to read from (else pooler_host_ro is the rw one).
        if (db.replicas > 0) await this.ensurePooler(db, 'ro', secrets, settings);
        else await this.removeContainer(poolerName(db, 'ro'));
      }
    });
  }

  /**
   * Replicas 1..n run (created when missing, resized, started); those beyond n go with
   * their volumes. postgresql: the primary has the replication role and a slot per replica,
   * and the slots of removed replicas are dropped (a slot left behind keeps WAL forever).
   */
  private async ensureReplicas(db: ClusterDatabase, secrets: ContainerSecrets, access: string, s: ContainerSettings, pushAccess: boolean): Promise<void> {
    const want = replicaCount(db);
    const existing = (await this.parts(db)).filter((c) => c.Labels['pier.component'] === 'replica');
    for (const c of existing.filter((c) => Number(c.Labels['pier.replica']) > want)) {
      await this.removeContainer(c.Id);
      await this.removeVolume(replicaName(db, Number(c.Labels['pier.replica'])));
    }
    if (db.engine === 'postgresql' && (want > 0 || existing.length > 0)) {
      const slots = Array.from({ length: want }, (_, i) => replicaSlot(i + 1)).join(' ');
      await this.execOk(
        serverName(db),
        ['pier-replication-role', Buffer.from(secrets.replicationPassword).toString('base64'), slots],
        'setting up replication',
      );
    }
    for (let n = 1; n <= want; n++) {
      const name = replicaName(db, n);
      const info = await ignoreNotFound(this.docker.getContainer(name).inspect());
      if (!info) {
        await this.docker.createVolume({ Name: name, Labels: this.labels(db) });
        await this.createAndStart(replicaContainer(db, n, secrets, access, s));
        continue;
      }
      if (info.Config.Labels?.['pier.external'] !== String(replicaPublished(db, n, s))) {
        // A port is published at creation only: a new container around the same volume, which follows the primary again.
        await this.stopAndRemove(info.Id);
        await this.createAndStart(replicaContainer(db, n, secrets, access, s));
        continue;
      }
      if (resourcesDiffer(info, db, s.hostCpus)) await this.docker.getContainer(info.Id).update(resourceUpdate(db, s.hostCpus));
      if (!info.State.Running) await this.docker.getContainer(info.Id).start();
      // mysql replicas get their accounts from the primary's binary log; postgresql's read pg_hba.conf of their own.
      else if (pushAccess && db.engine === 'postgresql') await this.pushAccess(name, access);
    }
  }

  private async removeContainer(nameOrId: string): Promise<void> {
    await ignoreNotFound(this.docker.getContainer(nameOrId).remove({ force: true, v: true }));
  }

  private async removeVolume(name: string): Promise<void> {
    try {
      await ignoreNotFound(this.docker.getVolume(name).remove());
    } catch (err) {
      // A container being removed still holds the volume for a moment.
      if (dockerStatusOf(err) !== 409) throw err;
      await new Promise((r) => setTimeout(r, 500));
      await ignoreNotFound(this.docker.getVolume(name).remove());
    }
  }

  /** Runs a command in a running container; a failure is the cluster failing (503) with its output. */
  private async execOk(container: string, cmd: string[], what: string): Promise<ExecResult> {
    let result: ExecResult;
    try {
      result = await exec(this.docker, container, cmd);
    } catch (err) {
      // 409: the container stopped (or restart-loops) between our start and the exec.
      if (dockerStatusOf(err) === 409) throw new ConflictError('the database server is not running; retry once it is', 'database_not_running');
      throw err;
    }
    return succeeded(result, what);
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
      if (dockerStatusOf(err) !== 304 && dockerStatusOf(err) !== 404) throw err;
    }
    await ignoreNotFound(this.docker.getContainer(id).remove({ force: true }));
  }

  private async createAndStart(spec: Docker.ContainerCreateOptions): Promise<void> {
    const container = await this.docker.createContainer(spec);
    await container.start();
  }

  /** A pooler in front of the primary or the replicas; recreated if it was made for another alias (it holds no state). */
  private async ensurePooler(db: ClusterDatabase, target: PoolerTarget, secrets: ContainerSecrets, settings: ContainerSettings): Promise<void> {
    const want = poolerContainer(db, target, secrets, settings);
    const existing = await ignoreNotFound(this.docker.getContainer(poolerName(db, target)).inspect());
    const aliases = existing?.NetworkSettings.Networks?.[settings.network]?.Aliases ?? [];
    const wantAliases = want.NetworkingConfig!.EndpointsConfig![settings.network]!.Aliases!;
    // Our aliases all start with `db-` (Docker adds the container's id of its own).
    const ours = aliases.filter((a: string) => a.startsWith('db-'));
    if (existing && ours.length === wantAliases.length && wantAliases.every((a) => ours.includes(a))) {
      if (!existing.State.Running) await this.docker.getContainer(existing.Id).start();
      return;
    }
    if (existing) await this.removeContainer(existing.Id);
    await this.createAndStart(want);
  }

  private async pushAccess(container: string, content: string): Promise<void> {
    await this.execOk(container, ['pier-access', Buffer.from(content).toString('base64')], 'applying access rules');
  }

  async observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>> {
    return this.guard(async () => {
      // Taken before the list: a list made while a restored server is being recreated may miss it.
      const recreating = new Set(this.finishing);
      const containers = await this.docker.listContainers({ all: true, filters: { label: ['pier.service=databases', `pier.vpc=${vpcId}`] } });
      const wanted = new Set(ids);
      const byDb = new Map<string, Docker.ContainerInfo[]>();
      for (const c of containers) {
        const id = c.Labels['pier.database'];
        if (id && wanted.has(id)) byDb.set(id, [...(byDb.get(id) ?? []), c]);
      }
      // A restored server that is up no longer needs its source's backups: it is
      // recreated without them, and is not ready until it runs so (another observer may
      // be recreating it right now).
      for (const c of containers) {
        const id = c.Labels['pier.database'] ?? '';
        if (c.Labels[RESTORE_SOURCE_LABEL] && wanted.has(id) && c.Status.includes('(healthy)')) {
          c.Status = 'Up (health: starting)';
          await this.dropRestoreSource(id, c.Id);
        }
      }
      // Why a server is not healthy is only in its health check's output: read for those alone.
      const outputs = new Map<string, string>();
      for (const c of [...byDb.values()].flat().filter(needsHealthOutput)) {
        const info = await ignoreNotFound(this.docker.getContainer(c.Id).inspect());
        const output = info && lastHealthOutput(info);
        if (output) outputs.set(c.Id, output);
      }
      return new Map(
        ids.map((id) => [
          id,
          // Between the old server's removal and the new one's start, another observer sees no server at all.
          recreating.has(id) || this.finishing.has(id)
            ? { phase: 'starting', reason: 'server: restored, starting without its source' }
            : observeParts(byDb.get(id) ?? [], outputs),
        ]),
      );
    });
  }

  /** Databases whose restored server is being recreated without its source (see dropRestoreSource). */
  private readonly finishing = new Set<string>();

  /**
   * Recreates a restored server as it is, minus its source's repository: once the restore
   * is in the data volume, nothing of the source stays within the new database's reach
   * (and the source's repository can be purged). Concurrent observers recreate it once,
   * and see it starting meanwhile.
   */
  private async dropRestoreSource(databaseId: string, containerId: string): Promise<void> {
    if (this.finishing.has(databaseId)) return;
    this.finishing.add(databaseId);
    try {
      const info = await ignoreNotFound(this.docker.getContainer(containerId).inspect());
      const source = info?.Config.Labels?.[RESTORE_SOURCE_LABEL];
      if (!info || !source) return;
      const spec = recreationWithout(info, repositoryVolumeName(source), RESTORE_SOURCE_LABEL);
      await this.stopAndRemove(info.Id);
      await this.createAndStart(spec);
    } finally {
      this.finishing.delete(databaseId);
    }
  }

  async delete(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      for (const c of await this.parts(db)) await this.removeContainer(c.Id);
      const { Volumes } = await this.docker.listVolumes({ filters: { label: ['pier.service=databases', `pier.database=${db.id}`] } });
      for (const v of Volumes ?? []) await this.removeVolume(v.Name);
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
    const replicas = replicaCount(db) > 0;
    const endpoints: Endpoints = {
      host: names.rw,
      port,
      // Without replicas, reads go where writes go.
      readOnlyHost: replicas ? names.ro : names.rw,
      ...(await this.externalPorts(db, info, replicas)),
    };
    if (db.engine === 'postgresql') {
      endpoints.poolerHost = names.poolerRw;
      endpoints.poolerHostRo = replicas ? names.poolerRo : names.poolerRw;
    }
    return { endpoints, credentials: { username: appUserOf(db.shortId), password: env.PIER_APP_PASSWORD ?? '' } };
  }

  /**
   * Where clients outside connect: the SNI listener's port (both endpoints: it routes by
   * name), else the server's published port and, for reads, replica 1's once it runs
   * (until then, and without replicas, the primary's).
   */
  private async externalPorts(db: ClusterDatabase, server: Docker.ContainerInspectInfo, replicas: boolean): Promise<Partial<Endpoints>> {
    const address = reachableAddress(this.opts.publishAddress);
    if (this.listens(db.engine)) {
      const port = this.postgresListenerPort;
      return db.externalAccessEnabled && port !== null ? { externalPort: port, externalAddress: address } : {};
    }
    const published = publishedPort(server, ENGINE_PORT[db.engine]);
    if (!published) return {};
    const replica = replicas ? await this.guard(() => ignoreNotFound(this.docker.getContainer(replicaName(db, 1)).inspect())) : undefined;
    const publishedRo = replica ? publishedPort(replica, ENGINE_PORT[db.engine]) : undefined;
    return { externalPort: published, externalAddress: address, ...(publishedRo ? { externalPortRo: publishedRo } : {}) };
  }

  /**
   * The SNI listener's way to a database: the server's address on its VPC network, or for
   * reads a healthy replica's (any one; the primary's while none is, as without replicas).
   * Null when the server does not run.
   */
  async listenerTarget(db: ClusterRef, readOnly: boolean): Promise<{ host: string; port: number } | null> {
    const network = vpcNetwork(db.vpcId);
    const addressOf = (c: Docker.ContainerInfo) => c.NetworkSettings?.Networks?.[network]?.IPAddress || null;
    const running = (await this.guard(() => this.parts(db))).filter((c) => c.State === 'running' && addressOf(c));
    const servers = running.filter((c) => c.Labels['pier.component'] === 'server');
    const replicas = running.filter((c) => c.Labels['pier.component'] === 'replica' && c.Status.includes('(healthy)'));
    const pool = readOnly && replicas.length > 0 ? replicas : servers;
    const pick = pool[Math.floor(Math.random() * pool.length)];
    return pick ? { host: addressOf(pick)!, port: ENGINE_PORT[db.engine] } : null;
  }

  async sqlTarget(db: ClusterRef): Promise<SqlTarget> {
    const info = await this.server(db);
    const ip = info.NetworkSettings.Networks?.[vpcNetwork(db.vpcId)]?.IPAddress;
    if (!info.State.Running || !ip) throw new UnavailableError('the database server is not running', 'database_unavailable');
    const env = envOf(info);
    const port = ENGINE_PORT[db.engine as Engine];
    return {
      engine: db.engine,
      host: ip,
      port,
      user: CONSOLE_USER,
      password: env.PIER_CONSOLE_PASSWORD ?? '',
      database: db.shortId,
      app: { user: appUserOf(db.shortId), password: env.PIER_APP_PASSWORD ?? '', open: () => new ExecTunnel(this.docker, serverName(db), port) },
    };
  }

  // ---------- backups (the images' `pier-backup`, see deploy/images) ----------

  /** `pier-backup <args>` in the server while it runs, else in a one-off container with the repository. */
  private async backupTool(db: ClusterRef, args: string[], what: string): Promise<ExecResult> {
    const server = await ignoreNotFound(this.docker.getContainer(serverName(db)).inspect());
    if (server?.State.Running) return this.execOk(server.Id, ['pier-backup', ...args], what);
    await this.ensureRepository(db.engine, db.id, false);
    const result = await runToEnd(
      this.docker,
      helperContainer(db.engine, db.id, ['pier-backup', ...args], {
        image: this.image(db.engine),
        labels: this.sharedLabels('backup-helper'),
        repository: this.opts.repository,
      }),
    );
    return succeeded(result, what);
  }

  async startBackup(db: ClusterRef, name: string, method: BackupMethod): Promise<void> {
    await this.guard(async () => {
      const server = await ignoreNotFound(this.docker.getContainer(serverName(db)).inspect());
      if (!server?.State.Running) throw new ConflictError('the database server is not running; a backup needs it running', 'database_not_running');
      await this.execOk(server.Id, ['pier-backup', 'start', name, method], 'starting the backup');
    });
  }

  async listBackups(db: ClusterRef): Promise<RepositoryListing> {
    return this.guard(async () => {
      const result = await this.backupTool(db, ['list'], 'reading the backup repository');
      return db.engine === 'postgresql' ? parsePostgresListing(result.stdout) : parseMysqlListing(result.stdout);
    });
  }

  async deleteBackup(db: ClusterRef, backup: { name: string; ref: string | null }): Promise<void> {
    const args = db.engine === 'postgresql' ? ['delete', backup.name, backup.ref ?? '-'] : ['delete', backup.name];
    await this.guard(() => this.backupTool(db, args, 'deleting the backup'));
  }

  async purgeBackups(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      // On volumes the repository is the database's own volume: purging is removing it
      // (after moving in what the shared volume may still hold, so that goes too). One
      // that a restoring server still mounts (409) is purged on a later pass.
      if (this.opts.repository.kind === 'volume') {
        await this.ensureRepository(db.engine, db.id, false);
        await this.removeVolume(repositoryVolumeName(db.id));
      } else {
        await this.backupTool(db, ['purge'], 'purging the backup repository');
      }
    });
  }

  async close(): Promise<void> {}
}
