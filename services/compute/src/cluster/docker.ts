import type Docker from 'dockerode';
import { crashPoint, dockerLimits, dockerStatusOf, vpcNetwork, type Logger, isDockerNotFound } from '@pier/kit';
import { ensureVpcNetwork } from '@pier/kit/docker';
import { isReference, referencesOf } from '../domain/env/env-input.ts';
import { referenceKey, type SecretsPort } from '../domain/env/secrets-port.ts';
import {
  WorkloadRejectedError,
  type ClusterPort,
  type ObserveResult,
  type ObserveTarget,
  type VpcScope,
  type Workload,
  type WorkloadRef,
  type WorkloadSpec,
} from '../domain/cluster-port.ts';
import { groupWorkloads, judge, MIN_READY_MS, type ReplicaUnit } from './replicas.ts';
import { HealthProber } from './docker-health.ts';
import { uptimeMs } from './docker-uptime.ts';
import { DockerEngine } from './docker-engine.ts';
import { imageForWorkspace } from './docker-image-access.ts';
import { ReplicaCpu } from './docker-cpu.ts';
import type { ClusterCallObserver } from './call-metrics.ts';
import { CronScheduler, type OwnedServices } from './docker-cron.ts';
import { EgressFirewall } from './docker-egress-firewall.ts';
import { KIND_SERVICE, LABEL, containerName, volumeName, type DockerRole } from './docker-labels.ts';
import type { Observation } from '../domain/services/status.ts';

/**
 * A crash-looping replica is restarted this many times, then left exited: both the
 * `restarting` state in between and the final `exited` read as `crashed`, and a service
 * that crashes for good stops burning CPU.
 */
export const MAX_RESTARTS = 3;

export interface DockerClusterOptions {
  /** `unix:///var/run/docker.sock` (default) or `tcp://host:port`. */
  host?: string;
  secrets: SecretsPort;
  logger: Logger;
  /** Per-request timeout of the Engine API. */
  timeoutMs?: number;
  /** How often the cron scheduler looks for due schedules. */
  cronIntervalMs?: number;
  /** pier/volume-tools (deploy/images): hands a new disk to the service's user. */
  volumeToolsImage?: string;
  /** Told of each Engine API call (compute's /metrics). */
  observe?: ClusterCallObserver;
  /**
   * pier/netfilter (deploy/images/netfilter), the host firewall that keeps VPC containers off
   * the host and link-local addresses (docker-egress-firewall.ts); null: the operator's own.
   */
  egressFirewallImage?: string | null;
  /**
   * Which of these services are this compute's (its database's). Several computes may share
   * one engine; the cron scheduler starts runs of its own templates only. Without it, every
   * template on the engine is taken as this compute's.
   */
  ownedServices?: OwnedServices;
}

/** The exit code in a listing's Status (`Exited (137) 3 seconds ago`, `Restarting (1) ...`). */
function exitCodeOf(status: string): string {
  return /\((-?\d+)\)/.exec(status)?.[1] ?? '?';
}

export class DockerCluster implements ClusterPort {
  readonly kind = 'docker' as const;
  private readonly engine: DockerEngine;
  private readonly docker: Docker;
  private readonly prober = new HealthProber();
  private readonly cron: CronScheduler;
  private readonly firewall: EgressFirewall | null;
  private readonly cpu: ReplicaCpu;
  private cpus?: number;
  /**
   * Takes replicas out of the edge's routing before they stop (the docker edge's drain, wired
   * in server.ts); resolves once none gets a new request and those in flight had time to end.
   */
  drainer: ((containerIds: string[]) => Promise<void>) | null = null;

  constructor(private readonly opts: DockerClusterOptions) {
    this.engine = new DockerEngine(opts.host, opts.timeoutMs ?? 15_000, opts.observe);
    this.docker = this.engine.docker;
    this.cron = new CronScheduler(this.engine, opts.logger, opts.cronIntervalMs, opts.ownedServices);
    this.firewall = EgressFirewall.of(this.engine, opts.egressFirewallImage, opts.logger);
    this.cpu = new ReplicaCpu(this.engine, (serviceId) => this.listService(serviceId));
  }

  private call<T>(what: string, fn: () => Promise<T>, tally?: { calls: number }): Promise<T> {
    return this.engine.call(what, fn, tally);
  }

  /** The scheduler that runs cron services' containers on time (see docker-cron.ts). */
  get scheduler(): CronScheduler {
    return this.cron;
  }

  start(): void {
    this.cron.start();
  }

  async stop(): Promise<void> {
    await this.cron.stop();
  }

  async ping(): Promise<void> {
    await this.call('ping', () => this.docker.ping());
  }

  async ensureVpc(scope: VpcScope): Promise<void> {
    // No container of a VPC starts before the host firewall is in place: every apply comes here first.
    await this.firewall?.ensure();
    // The databases service joins the same network and may create it at the same moment:
    // the shared helper converges on one network whoever creates it.
    await this.call('network ensure', () =>
      ensureVpcNetwork(this.docker, scope.vpcId, { [LABEL.managed]: 'true', [LABEL.workspace]: scope.workspaceId, [LABEL.vpc]: scope.vpcId }),
    );
  }

  async apply(spec: WorkloadSpec): Promise<void> {
    await this.ensureVpc(spec);
    const existing = await this.listService(spec.serviceId);
    const mine = existing.filter((c) => c.Labels[LABEL.deployment] === spec.deploymentId);
    const base = await this.createOptions(spec);

    if (spec.config.disk_size_gb !== null) await this.ensureVolume(spec);
    if (spec.config.service_type === 'cron') {
      if (!mine.some((c) => c.Labels[LABEL.role] === 'template')) {
        // The schedule's definition: created, never started; the scheduler runs copies of it.
        await this.create(base, spec, 'template', 'cron');
      }
    } else {
      await this.runReplicas(spec, mine, base, spec.replicas ?? spec.config.min_replicas);
    }
    // The new replicas are up: retire every other deployment's containers, the running
    // replicas once the edge no longer sends them anything.
    const retired = existing.filter((c) => c.Labels[LABEL.deployment] !== spec.deploymentId);
    await this.drain(spec, retired);
    for (const c of retired) await this.remove(c.Id);
  }

  /** Only a web service's replicas are routed (by the edge). */
  private async drain(spec: WorkloadSpec, containers: Docker.ContainerInfo[]): Promise<void> {
    if (spec.config.service_type !== 'web') return;
    const serving = containers.filter((c) => c.State === 'running' && c.Labels[LABEL.role] === 'replica').map((c) => c.Id);
    if (serving.length && this.drainer) await this.drainer(serving);
  }

  /**
   * The elastic controller's scale (domain/elastic): replicas 0..n-1 of the deployment run
   * (a parked one is started again, which is faster than creating it), and those from n up
   * are stopped and kept, parked, for the next wake or scale-up.
   */
  async scale(spec: WorkloadSpec, replicas: number): Promise<void> {
    const mine = (await this.listService(spec.serviceId)).filter((c) => c.Labels[LABEL.deployment] === spec.deploymentId);
    await this.runReplicas(spec, mine, null, replicas);
  }

  /** Every running replica of the service (any deployment, as the edge's alias has them), with its address on the VPC's network. */
  async replicaAddresses(serviceId: string, vpcId: string): Promise<{ id: string; index: number; address: string }[]> {
    const network = vpcNetwork(vpcId);
    return (await this.listService(serviceId))
      .filter((c) => c.State === 'running' && c.Labels[LABEL.role] === 'replica' && c.Labels[LABEL.vpc] === vpcId)
      .map((c) => ({ id: c.Id, index: Number(c.Labels[LABEL.replica] ?? 0), address: c.NetworkSettings?.Networks?.[network]?.IPAddress ?? '' }))
      .filter((r) => r.address !== '');
  }

  /** The CPU each running replica of the service used since the previous call, as a fraction of what it was given (docker-cpu.ts). */
  replicaCpu(serviceId: string): Promise<number[]> {
    return this.cpu.read(serviceId);
  }

  private async runReplicas(spec: WorkloadSpec, mine: Docker.ContainerInfo[], known: Docker.ContainerCreateOptions | null, replicas: number): Promise<void> {
    let base = known;
    const replicaAt = (i: number) => mine.find((c) => c.Labels[LABEL.role] === 'replica' && c.Labels[LABEL.replica] === String(i));
    for (let i = 0; i < replicas; i++) {
      const found = replicaAt(i);
      if (!found) {
        base ??= await this.createOptions(spec);
        const id = await this.create(base, spec, 'replica', String(i));
        // Created, never started: the next apply of this deployment starts it (`created` below).
        crashPoint('compute.rollout.container-created');
        await this.call('container start', () => this.docker.getContainer(id).start());
      } else if (found.State === 'created' || found.State === 'exited') {
        await this.call('container start', () => this.docker.getContainer(found.Id).start());
      }
    }
    const parked = mine.filter((c) => c.Labels[LABEL.role] === 'replica' && Number(c.Labels[LABEL.replica]) >= replicas && c.State === 'running');
    // Out of the edge's routing first (an elastic service's activator drained them already),
    // then stopped with a short grace, and kept.
    await this.drain(spec, parked);
    await Promise.all(
      parked.map((c) =>
        this.call('container stop', () =>
          this.docker
            .getContainer(c.Id)
            .stop({ t: 5 })
            .catch((err: unknown) => {
              // Stopped (304) or gone (404) already: that is the goal.
              if (![304, 404].includes(dockerStatusOf(err) ?? 0)) throw err;
            }),
        ),
      ),
    );
  }

  async observeMany(scope: VpcScope, targets: ObserveTarget[]): Promise<ObserveResult> {
    // Counted on its own: other work (the cron scheduler, other requests) runs meanwhile.
    const tally = { calls: 0 };
    // One target (a detail read): only its containers; otherwise the whole VPC's at once.
    const only = targets.length === 1 ? [`${LABEL.service}=${targets[0]!.serviceId}`] : [];
    const containers = await this.call(
      'container list',
      () =>
        this.docker.listContainers({
          all: true,
          filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.vpc}=${scope.vpcId}`, ...only] }),
        }),
      tally,
    );
    const byService = new Map<string, Docker.ContainerInfo[]>();
    for (const c of containers) {
      const id = c.Labels[LABEL.service];
      if (id) (byService.get(id) ?? byService.set(id, []).get(id)!).push(c);
    }
    const network = vpcNetwork(scope.vpcId);
    const observations = new Map<string, Observation>();
    await Promise.all(
      targets.map(async (t) => {
        const units = await Promise.all((byService.get(t.serviceId) ?? []).map((c) => this.unitOf(c, t, network)));
        observations.set(t.serviceId, judge(t, units, { missingIsFailure: true, cronNeedsTemplate: true }));
      }),
    );
    return { observations, calls: tally.calls };
  }

  async workloads(scope: VpcScope): Promise<Workload[]> {
    const containers = await this.call('container list', () =>
      this.docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.vpc}=${scope.vpcId}`] }),
      }),
    );
    return groupWorkloads(
      scope,
      containers.map((c) => c.Labels),
      { service: LABEL.service, name: LABEL.serviceName, deployment: LABEL.deployment },
    );
  }

  async delete(ref: WorkloadRef): Promise<void> {
    for (const c of await this.listService(ref.serviceId)) await this.remove(c.Id);
    // A disk restore's volume has a name of its own: every volume labelled with the service goes.
    const { Volumes } = await this.call('volume list', () =>
      this.docker.listVolumes({ filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.service}=${ref.serviceId}`] }) }),
    );
    for (const name of new Set([volumeName(ref.serviceId), ...(Volumes ?? []).map((v) => v.Name)])) await this.engine.removeVolume(name);
  }

  /** Every container of one service (all states). */
  async listService(serviceId: string): Promise<Docker.ContainerInfo[]> {
    return this.call('container list', () =>
      this.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.service}=${serviceId}`] }) }),
    );
  }

  private async remove(id: string): Promise<void> {
    this.prober.forget(id);
    await this.engine.removeContainer(id);
  }

  private async unitOf(c: Docker.ContainerInfo, t: ObserveTarget, network: string): Promise<ReplicaUnit> {
    const role = (c.Labels[LABEL.role] ?? 'replica') as DockerRole;
    const replica = c.Labels[LABEL.replica] ?? '?';
    const unit = (state: ReplicaUnit['state'], message: string | null = null): ReplicaUnit => ({
      deploymentId: c.Labels[LABEL.deployment] ?? null,
      role,
      state,
      message,
      createdAt: c.Created * 1000,
    });
    // Stopped by a sleep or a scale-down (scale above): parked, not crashed.
    if (role === 'replica' && Number(replica) >= t.replicas && (c.State === 'exited' || c.State === 'created')) return unit('parked');
    const who = role === 'run' ? `the run started ${new Date(c.Created * 1000).toISOString()}` : `replica ${replica}`;
    switch (c.State) {
      case 'created':
        return unit(role === 'template' ? 'ready' : 'pending');
      case 'running': {
        if (role === 'run') return unit('pending');
        if (t.serviceType !== 'web' || !t.healthCheckPath || t.port === null) {
          // Up since its last start (a crash loop restarts the same container); Created is
          // the bound when the status text says nothing.
          const sinceCreated = Date.now() - c.Created * 1000;
          const up = Math.min(uptimeMs(c.Status) ?? sinceCreated, sinceCreated);
          return up >= MIN_READY_MS ? unit('ready') : unit('pending', `${who} is starting`);
        }
        const ip = c.NetworkSettings?.Networks?.[network]?.IPAddress || undefined;
        const problem = await this.prober.check(c.Id, ip, t.port, t.healthCheckPath);
        return problem ? unit('pending', problem) : unit('ready');
      }
      case 'restarting':
        return unit('failed', `${who} is restart-looping (last exit code ${exitCodeOf(c.Status)})`);
      case 'exited': {
        const code = exitCodeOf(c.Status);
        if (role === 'run' && code === '0') return unit('done');
        const killed = code === '137' ? ' (killed, or out of memory)' : '';
        return unit('failed', `${who} exited with code ${code}${killed}`);
      }
      case 'removing':
        return unit('pending', `${who} is being removed`);
      case 'paused':
        // A disk backup freezes the replicas for the moment its copy takes (docker-disk-backups.ts).
        return unit('pending', `${who} is paused`);
      default: // dead
        return unit('failed', `${who} is ${c.State}`);
    }
  }

  /** The container definition every replica (and cron run) of this deployment shares. */
  private async createOptions(spec: WorkloadSpec): Promise<Docker.ContainerCreateOptions> {
    const c = spec.config;
    const refs = referencesOf(spec.env);
    const values = refs.length ? await this.opts.secrets.resolve(spec, refs) : new Map<string, string>();
    const env = spec.env.map((e) => `${e.key}=${isReference(e) ? values.get(referenceKey({ secretId: e.secret_id, key: e.secret_key })) : e.value}`);
    const limits = dockerLimits(spec.resources, await this.hostCpus());
    const network = vpcNetwork(spec.vpcId);
    return {
      Image: await imageForWorkspace(this.engine, spec.image, spec.workspaceId),
      ...(c.command ? { Entrypoint: c.command } : {}),
      ...(c.args && c.args.length ? { Cmd: c.args } : {}),
      Env: env,
      User: String(c.run_as_user),
      ...(c.port !== null ? { ExposedPorts: { [`${c.port}/tcp`]: {} } } : {}),
      HostConfig: {
        ...limits,
        RestartPolicy: c.service_type === 'cron' ? { Name: 'no' } : { Name: 'on-failure', MaximumRetryCount: MAX_RESTARTS },
        NetworkMode: network,
        // A web process needs no capability: Docker already lets any user bind ports under
        // 1024 in the container's own network namespace (net.ipv4.ip_unprivileged_port_start=0),
        // and what root does with the defaults (chown, switch users, raw sockets to forge
        // packets on the VPC's bridge) is what a tenant must not. A run_as_user 0 is the
        // container's root with nothing more than file ownership. Cron runs copy this.
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
        ...(c.disk_mount_path ? { Mounts: [{ Type: 'volume', Source: spec.diskVolume ?? volumeName(spec.serviceId), Target: c.disk_mount_path }] } : {}),
      },
      // Other services of the VPC reach this one by its name; the edge by an alias of its id.
      NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [spec.serviceName] } } },
    };
  }

  private async create(base: Docker.ContainerCreateOptions, spec: WorkloadSpec, role: DockerRole, suffix: string): Promise<string> {
    const labels: Record<string, string> = {
      [LABEL.managed]: 'true',
      [LABEL.kind]: KIND_SERVICE,
      [LABEL.workspace]: spec.workspaceId,
      [LABEL.vpc]: spec.vpcId,
      [LABEL.service]: spec.serviceId,
      [LABEL.serviceName]: spec.serviceName,
      [LABEL.deployment]: spec.deploymentId,
      [LABEL.role]: role,
    };
    if (role === 'replica') labels[LABEL.replica] = suffix;
    if (role === 'template') labels[LABEL.cronSchedule] = spec.config.cron_schedule ?? '';
    const name = containerName(spec.serviceName, spec.deploymentId, suffix);
    try {
      const created = await this.call('container create', () => this.docker.createContainer({ ...base, name, Labels: labels }));
      return created.id;
    } catch (err) {
      if (err instanceof WorkloadRejectedError && /No such image/i.test(err.message)) {
        throw new WorkloadRejectedError(`image ${spec.image} is not available in the cluster (no such image)`);
      }
      // A retry of an apply that created it already: take the existing one.
      if (err instanceof WorkloadRejectedError && /already in use/.test(err.message)) {
        const found = (await this.listService(spec.serviceId)).find((c) => c.Names.includes(`/${name}`));
        if (found) return found.Id;
      }
      throw err;
    }
  }

  private async ensureVolume(spec: WorkloadSpec): Promise<void> {
    const name = spec.diskVolume ?? volumeName(spec.serviceId);
    const exists = await this.call('volume inspect', () =>
      this.docker
        .getVolume(name)
        .inspect()
        .then(
          () => true,
          (err: unknown) => {
            if (isDockerNotFound(err)) return false;
            throw err;
          },
        ),
    );
    if (exists) return;
    // Docker's local driver cannot cap a volume's size: disk_size_gb is enforced on Kubernetes only.
    await this.call('volume create', () =>
      this.docker.createVolume({
        Name: name,
        Labels: { [LABEL.managed]: 'true', [LABEL.kind]: KIND_SERVICE, [LABEL.vpc]: spec.vpcId, [LABEL.service]: spec.serviceId },
      }),
    );
    try {
      await this.handOver(name, spec);
    } catch (err) {
      // New and empty: gone again, so the next apply creates and hands it over afresh.
      await this.engine.removeVolume(name).catch(() => undefined);
      throw err;
    }
  }

  /**
   * A new volume's root belongs to root, and replicas run as run_as_user with no way to gain
   * privileges: the disk is handed to that user once, as Kubernetes' fsGroup does for a claim.
   */
  private async handOver(volume: string, spec: WorkloadSpec): Promise<void> {
    const image = this.opts.volumeToolsImage ?? 'pier/volume-tools:1';
    const uid = spec.config.run_as_user;
    const created = await this.call('container create', () =>
      this.docker.createContainer({
        Image: image,
        Entrypoint: ['chown', `${uid}:${uid}`, '/disk'],
        User: '0',
        Labels: { [LABEL.managed]: 'true', [LABEL.role]: 'disk-setup' },
        // chown to another user is CAP_CHOWN's, and that is all this container does.
        HostConfig: {
          Mounts: [{ Type: 'volume', Source: volume, Target: '/disk' }],
          NetworkMode: 'none',
          CapDrop: ['ALL'],
          CapAdd: ['CHOWN'],
          SecurityOpt: ['no-new-privileges'],
        },
      }),
    ).catch((err: Error) => {
      if (/no such image/i.test(err.message)) throw new WorkloadRejectedError(`the image ${image} is not on the engine (deploy/images/build.sh volume-tools)`);
      throw err;
    });
    try {
      const container = this.docker.getContainer(created.id);
      await this.call('container start', () => container.start());
      const { StatusCode } = (await this.call('container wait', () => container.wait())) as { StatusCode: number };
      if (StatusCode !== 0) throw new WorkloadRejectedError(`could not hand the disk ${volume} to uid ${uid} (exit code ${StatusCode})`);
    } finally {
      await this.engine.removeContainer(created.id);
    }
  }

  private async hostCpus(): Promise<number> {
    if (this.cpus === undefined) {
      const info = (await this.call('info', () => this.docker.info())) as { NCPU?: number };
      this.cpus = info.NCPU ?? 1;
    }
    return this.cpus;
  }
}
