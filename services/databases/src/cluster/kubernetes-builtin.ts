import { randomBytes } from 'node:crypto';
import type { KubeConfig, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { ConflictError, isKubernetesNotFound, kubernetesFault, UnavailableError, vpcNamespace, type Logger } from '@pier/kit';
import { slimLabels, slimPod, WatchCache } from '@pier/kit/kubernetes-watch-cache';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import { appUserOf, CONSOLE_USER } from '../domain/database.ts';
import type { BackupMethod } from '../domain/backup-records.ts';
import { renderMysqlAccess, renderPgHba } from '../domain/access.ts';
import type { ExternalDomains } from '../domain/context.ts';
import type { Observation } from '../domain/status.ts';
import type { ClusterDatabase, ClusterRef, Credentials, DatabaseCluster, Endpoints, RepositoryListing, SqlTarget } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';
import { parseMysqlListing, parsePostgresListing } from './docker-backups.ts';
import { ENGINE_PORT, replicaCount, replicaSlot } from './docker-containers.ts';
import type { ExecResult } from './docker-engine.ts';
import { accessPolicy, namespaceManifest } from './kubernetes-manifests.ts';
import { LABELS, SELECTOR, refsOf, type KubernetesSettings, type Manifest } from './kubernetes-meta.ts';
import { KubernetesObjects } from './kubernetes-objects.ts';
import { PodCommands } from './kubernetes-pods.ts';
import { backupsUnavailable } from './kubernetes.ts';
import { observePods } from './kubernetes-builtin-observe.ts';
import {
  accessSecret,
  backupToolPod,
  builtinNames,
  credentialsSecret,
  externalServices,
  internalServices,
  poolerDeployment,
  primaryStatefulSet,
  replicaStatefulSet,
  serverContainerName,
  storeEnvSecret,
  type BuiltinSettings,
} from './kubernetes-builtin-manifests.ts';

// The built-in kubernetes mode (PIER_DATABASES_KUBERNETES_OPERATOR=none): Pier runs each
// database itself from its own images, as the docker adapter does, on plain StatefulSets,
// Services and Deployments (kubernetes-builtin-manifests.ts). What the docker adapter does
// with `docker exec` (access rules, replication, backups) it does with the exec
// subresource (kubernetes-pods.ts). No operator watches these pods: a failed primary is
// restarted by its StatefulSet on the same volume, never replaced by a promoted replica.

export interface BuiltinKubernetesOptions {
  installation?: string;
  postgresImage: string;
  mysqlImage: string;
  storageClass?: string;
  /** Addresses pods (the control plane included) connect from inside the cluster. */
  clusterNetworks?: string[];
  /** How clients outside reach a database: a LoadBalancer Service, or a NodePort on every node. */
  externalService?: 'LoadBalancer' | 'NodePort';
  /** NodePort: the address clients outside dial (a node's); else the first node's own. */
  externalAddress?: string;
  domains: ExternalDomains;
  backupStore?: S3Store;
  timeoutMs?: number;
  /**
   * Keep watch-fed copies of the databases' StatefulSets and pods (kit's WatchCache), so a
   * VPC's observation reads them from memory; stopped by close(). Without it, listed each time.
   */
  watch?: { log: Logger };
}

/** What the images run: one PostgreSQL and one MariaDB version, as on docker. */
export const BUILTIN_ENGINES: ClusterCapabilities['engines'] = {
  postgresql: { versions: ['15'], defaultVersion: '15', server: 'PostgreSQL', replicas: { min: 0, max: 5, default: 0, shrinks: true } },
  mysql: { versions: ['10.11'], defaultVersion: '10.11', server: 'MariaDB', replicas: { min: 1, max: 5, default: 1, shrinks: true } },
};

const password = () => randomBytes(24).toString('hex');
const b64 = (text: string) => Buffer.from(text).toString('base64');

type SecretObject = KubernetesObject & { data?: Record<string, string> };
type ServiceObject = KubernetesObject & { spec?: { clusterIP?: string; ports?: { nodePort?: number }[] } };

/** A command's result, or its failure as the cluster failing (503), in the command's last words. */
function succeeded(result: ExecResult, what: string): ExecResult {
  if (result.exitCode === 0) return result;
  const said = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
  throw new UnavailableError(`${what} failed: ${said || `exit ${result.exitCode}`}`, 'cluster_unavailable');
}

/** The labels observe (kubernetes-builtin-observe.ts) reads of a pod; the others are not kept in the watched copy. */
const OBSERVED_POD_LABELS = [LABELS.database, LABELS.role, 'apps.kubernetes.io/pod-index'];

export class BuiltinKubernetesCluster extends KubernetesObjects implements DatabaseCluster {
  readonly capabilities: ClusterCapabilities = { adapter: 'kubernetes', engines: BUILTIN_ENGINES, enforcesStorage: true };
  private readonly settings: BuiltinSettings;
  private readonly networks: KubernetesSettings;
  private readonly pods: PodCommands;
  private readonly watched?: { sets: WatchCache<KubernetesObject>; pods: WatchCache<V1Pod> };

  constructor(
    kc: KubeConfig,
    private readonly opts: BuiltinKubernetesOptions,
  ) {
    super(kc, opts.installation, opts.timeoutMs);
    this.pods = new PodCommands(kc, opts.timeoutMs);
    if (opts.watch) {
      const { log } = opts.watch;
      this.watched = {
        sets: new WatchCache(kc, {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          path: '/apis/apps/v1/statefulsets',
          labelSelector: SELECTOR,
          slim: (raw) => slimLabels(raw, [LABELS.database]),
          log,
        }),
        pods: new WatchCache(kc, {
          apiVersion: 'v1',
          kind: 'Pod',
          path: '/api/v1/pods',
          labelSelector: SELECTOR,
          slim: (raw) => slimPod(raw, OBSERVED_POD_LABELS),
          log,
        }),
      };
      this.watched.sets.start();
      this.watched.pods.start();
    }
    this.settings = {
      image: (engine) => (engine === 'postgresql' ? opts.postgresImage : opts.mysqlImage),
      storageClass: opts.storageClass,
      externalService: opts.externalService ?? 'LoadBalancer',
      backupStore: opts.backupStore,
    };
    // The operator mode's access policy, with its settings: the same rules either way.
    this.networks = {
      storageClass: opts.storageClass,
      clusterNetworks: opts.clusterNetworks ?? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
      postgresImage: () => opts.postgresImage,
      mysqlImage: () => opts.mysqlImage,
    };
  }

  /** The database's passwords: made once, kept in its Secret, never regenerated. */
  private async passwords(db: ClusterDatabase): Promise<{ app: string; console: string; replication: string }> {
    const ns = vpcNamespace(db.vpcId);
    const existing = await this.read<SecretObject>('v1', 'Secret', builtinNames(db.shortId).credentials, ns);
    const data = existing?.data;
    if (data?.password && data.console && data.replication) {
      const text = (k: string) => Buffer.from(data[k]!, 'base64').toString('utf8');
      return { app: text('password'), console: text('console'), replication: text('replication') };
    }
    const made = { app: password(), console: password(), replication: password() };
    await this.applyObject(credentialsSecret(db, made));
    return made;
  }

  private renderAccess(db: ClusterDatabase, passwords: { app: string; console: string; replication: string }): string {
    const policy = accessPolicy(db, this.networks);
    return db.engine === 'postgresql' ? renderPgHba(policy) : renderMysqlAccess(policy, passwords);
  }

  private async podsOf(db: ClusterRef): Promise<V1Pod[]> {
    return this.pods.pods(vpcNamespace(db.vpcId), `${SELECTOR},${LABELS.database}=${db.id}`);
  }

  /** The primary's pod when it runs and is not going away. */
  private async runningPrimary(db: ClusterRef): Promise<V1Pod | undefined> {
    const pods = await this.podsOf(db);
    return pods.find((p) => p.metadata?.labels?.[LABELS.role] === 'primary' && p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  }

  private async execIn(db: ClusterRef, pod: V1Pod, cmd: string[], what: string): Promise<ExecResult> {
    return succeeded(await this.pods.run(vpcNamespace(db.vpcId), pod.metadata!.name!, serverContainerName, cmd), what);
  }

  async apply(db: ClusterDatabase): Promise<void> {
    if (db.restore && !this.opts.backupStore) throw backupsUnavailable();
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const n = builtinNames(db.shortId);
      await this.applyObject(namespaceManifest(db.vpcId));
      const passwords = await this.passwords(db);
      const access = this.renderAccess(db, passwords);
      // Read by a first start; a running server is given the rules below.
      await this.applyObject(accessSecret(db, access));
      if (this.opts.backupStore) await this.applyObject(storeEnvSecret(db, this.opts.backupStore));
      for (const m of internalServices(db)) await this.applyObject(m);
      await this.applyStatefulSet(db, primaryStatefulSet(db, this.settings));
      if (replicaCount(db) > 0) await this.applyStatefulSet(db, replicaStatefulSet(db, this.settings));
      else await this.remove('apps/v1', 'StatefulSet', n.replicas, ns);
      await this.growVolumes(db);
      if (db.engine === 'postgresql') {
        await this.applyObject(poolerDeployment(db, 'rw', this.settings));
        // Read-only pooling only where there are replicas to read from (else pooler_host_ro is the rw one).
        if (db.replicas > 0) await this.applyObject(poolerDeployment(db, 'ro', this.settings));
        else await this.remove('apps/v1', 'Deployment', n.poolerRo, ns);
      }
      const domain = this.opts.domains[db.engine];
      if (db.externalAccessEnabled) for (const m of externalServices(db, this.settings, domain)) await this.applyObject(m);
      else for (const name of [n.external, n.externalRo]) await this.remove('v1', 'Service', name, ns);
      await this.converge(db, access, passwords);
    });
  }

  /**
   * A StatefulSet's claim templates are fixed once it exists (the API server refuses a
   * change): it keeps the ones it was made with, and a larger `storage_gb` is asked of its
   * volumes themselves (growVolumes).
   */
  private async applyStatefulSet(db: ClusterDatabase, m: Manifest): Promise<void> {
    type Set = KubernetesObject & { spec?: { volumeClaimTemplates?: unknown[] } };
    const existing = await this.read<Set>('apps/v1', 'StatefulSet', m.metadata.name, vpcNamespace(db.vpcId));
    const templates = existing?.spec?.volumeClaimTemplates;
    await this.applyObject(templates ? { ...m, spec: { ...(m.spec as object), volumeClaimTemplates: templates } } : m);
  }

  /**
   * Every volume of the database asks for `storage_gb`: a volume smaller than that is grown
   * (never shrunk). A StorageClass that cannot expand volumes refuses, and the change with it.
   */
  private async growVolumes(db: ClusterDatabase): Promise<void> {
    type Claim = KubernetesObject & { spec?: { resources?: { requests?: { storage?: string } } } };
    const ns = vpcNamespace(db.vpcId);
    const claims = await this.listIn<Claim>('v1', 'PersistentVolumeClaim', ns, `${SELECTOR},${LABELS.database}=${db.id}`);
    for (const c of claims) {
      const size = c.spec?.resources?.requests?.storage ?? '';
      const gi = /^(\d+)Gi$/.exec(size);
      if (gi && Number(gi[1]) >= db.storageGb) continue;
      try {
        await this.applyObject({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: c.metadata!.name!, namespace: ns },
          spec: { resources: { requests: { storage: `${db.storageGb}Gi` } } },
        });
      } catch (err) {
        const fault = kubernetesFault(err);
        if (!fault || fault.kind === 'unreachable' || (fault.status !== 403 && fault.status !== 422)) throw err;
        throw new ConflictError(
          `storage_gb: the cluster cannot grow the database's volumes (their StorageClass does not expand volumes): ${fault.reason}`,
          'storage_not_expandable',
          { field: 'storage_gb' },
        );
      }
    }
  }

  /**
   * What a running server is told at once (a new one reads it at its start): the access
   * rules, on its replicas too for postgresql (mysql replicas take the primary's accounts
   * from its binary log), and, for postgresql, the replication slots of the replicas it
   * keeps (a slot left behind keeps WAL forever).
   */
  private async converge(db: ClusterDatabase, access: string, passwords: { replication: string }): Promise<void> {
    const pods = (await this.podsOf(db)).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    const servers = pods.filter((p) => ['primary', ...(db.engine === 'postgresql' ? ['replica'] : [])].includes(p.metadata?.labels?.[LABELS.role] ?? ''));
    for (const pod of servers) await this.execIn(db, pod, ['pier-access', b64(access)], 'applying access rules');
    const primary = pods.find((p) => p.metadata?.labels?.[LABELS.role] === 'primary');
    if (primary && db.engine === 'postgresql') {
      const slots = Array.from({ length: replicaCount(db) }, (_, i) => replicaSlot(i + 1)).join(' ');
      await this.execIn(db, primary, ['pier-replication-role', b64(passwords.replication), slots], 'setting up replication');
    }
  }

  async observe(vpcId: string, ids: string[]): Promise<Map<string, Observation>> {
    const ns = vpcNamespace(vpcId);
    const list = async <T>(apiVersion: string, kind: string): Promise<T[]> => {
      try {
        return await this.listIn<T>(apiVersion, kind, ns, SELECTOR);
      } catch (err) {
        if (isKubernetesNotFound(err)) return [];
        throw err;
      }
    };
    // From the watched copies while both are connected; else one list per kind for the whole VPC, never one call per database.
    const cached = [this.watched?.sets.items(ns), this.watched?.pods.items(ns)] as const;
    const [sets, pods] =
      cached[0] && cached[1]
        ? [cached[0], cached[1]]
        : await this.guard(() => Promise.all([list<KubernetesObject>('apps/v1', 'StatefulSet'), list<V1Pod>('v1', 'Pod')]));
    const wanted = new Set(ids);
    const of = <T extends KubernetesObject>(items: T[], id: string) => items.filter((o) => o.metadata?.labels?.[LABELS.database] === id);
    // Why a server is not ready is only in its readiness command's output: asked of those alone.
    const outputs = new Map<string, string>();
    for (const pod of pods) {
      const role = pod.metadata?.labels?.[LABELS.role];
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      const running = pod.status?.containerStatuses?.[0]?.state?.running;
      if (!wanted.has(pod.metadata?.labels?.[LABELS.database] ?? '') || ready || !running || (role !== 'primary' && role !== 'replica')) continue;
      const result = await this.pods.run(ns, pod.metadata!.name!, serverContainerName, ['pier-health']).catch(() => null);
      if (result) outputs.set(pod.metadata!.name!, (result.stdout || result.stderr).trim());
    }
    return new Map(ids.map((id) => [id, observePods(of(sets, id).length > 0, of(pods, id), outputs)]));
  }

  /** Everything the database runs on goes, its volumes with it; its backups stay in the store. */
  async delete(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const selector = `${SELECTOR},${LABELS.database}=${db.id}`;
      const kinds: [string, string][] = [
        ['v1', 'Service'],
        ['apps/v1', 'Deployment'],
        ['apps/v1', 'StatefulSet'],
        ['v1', 'Secret'],
        ['v1', 'PersistentVolumeClaim'],
      ];
      for (const [apiVersion, kind] of kinds) {
        for (const o of await this.listIn<KubernetesObject>(apiVersion, kind, ns, selector)) await this.remove(apiVersion, kind, o.metadata!.name!, ns);
      }
    });
  }

  async list(): Promise<ClusterRef[]> {
    const installation = this.opts.installation;
    if (!installation) return [];
    const selector = `${SELECTOR},${LABELS.installation}=${installation}`;
    const kinds: [string, string][] = [
      ['apps/v1', 'StatefulSet'],
      ['apps/v1', 'Deployment'],
      ['v1', 'Service'],
      ['v1', 'Secret'],
    ];
    // Every namespace at once: one call per kind. (PVCs carry the labels of the claim
    // template, without the installation's: they go with their StatefulSet, or in delete.)
    const lists = await this.guard(() => Promise.all(kinds.map(([v, k]) => this.listIn<KubernetesObject>(v, k, undefined, selector))));
    return refsOf(lists.flat());
  }

  private hosts(db: ClusterRef & { replicas?: number }) {
    const n = builtinNames(db.shortId);
    const svc = (name: string) => `${name}.${vpcNamespace(db.vpcId)}.svc`;
    // Without replicas the -ro Service has no endpoints: reads go where writes go.
    const replicas = replicaCount({ engine: db.engine, replicas: db.replicas ?? 0 }) > 0;
    return { rw: svc(n.rw), ro: svc(replicas ? n.ro : n.rw), poolerRw: svc(n.poolerRw), poolerRo: svc(db.replicas ? n.poolerRo : n.poolerRw) };
  }

  async connection(db: ClusterDatabase): Promise<{ endpoints: Endpoints; credentials: Credentials }> {
    const h = this.hosts(db);
    const port = ENGINE_PORT[db.engine];
    const endpoints: Endpoints = { host: h.rw, port, readOnlyHost: h.ro, ...(await this.external(db)) };
    if (db.engine === 'postgresql') {
      endpoints.poolerHost = h.poolerRw;
      endpoints.poolerHostRo = h.poolerRo;
    }
    const secret = await this.guard(() => this.read<SecretObject>('v1', 'Secret', builtinNames(db.shortId).credentials, vpcNamespace(db.vpcId)));
    if (!secret?.data?.password) throw new ConflictError('the database has no credentials in the cluster', 'database_unavailable');
    return { endpoints, credentials: { username: appUserOf(db.shortId), password: Buffer.from(secret.data.password, 'base64').toString('utf8') } };
  }

  /**
   * Where clients outside connect: with a LoadBalancer, the engine's port at the address
   * it was given (or the domain's name); with NodePorts, each Service's port on the node.
   */
  private async external(db: ClusterDatabase): Promise<Partial<Endpoints>> {
    if (!db.externalAccessEnabled) return {};
    const ns = vpcNamespace(db.vpcId);
    const n = builtinNames(db.shortId);
    const domain = this.opts.domains[db.engine];
    if (this.settings.externalService === 'LoadBalancer') {
      const port = ENGINE_PORT[db.engine];
      if (domain) return { externalPort: port };
      const [address, addressRo] = await Promise.all([this.loadBalancerAddress(n.external, ns), this.loadBalancerAddress(n.externalRo, ns)]);
      return { externalPort: port, externalAddress: address, externalAddressRo: addressRo };
    }
    const [rw, ro] = await this.guard(() => Promise.all([n.external, n.externalRo].map((name) => this.read<ServiceObject>('v1', 'Service', name, ns))));
    const nodePort = (s: ServiceObject | undefined) => s?.spec?.ports?.[0]?.nodePort;
    if (!nodePort(rw)) return {};
    const address = domain ? undefined : await this.nodeAddress();
    return { externalPort: nodePort(rw), externalPortRo: nodePort(ro), externalAddress: address, externalAddressRo: address };
  }

  private nodeAddressKnown?: string;

  /** NodePort's address: the one configured, else the first node's external (or internal) IP. */
  private async nodeAddress(): Promise<string | undefined> {
    if (this.opts.externalAddress) return this.opts.externalAddress;
    if (this.nodeAddressKnown) return this.nodeAddressKnown;
    type NodeObject = KubernetesObject & { status?: { addresses?: { type: string; address: string }[] } };
    const nodes = await this.guard(() => this.api.list('v1', 'Node', undefined, undefined, undefined, undefined, undefined, undefined, 1));
    const addresses = (nodes.items[0] as NodeObject | undefined)?.status?.addresses ?? [];
    this.nodeAddressKnown = (addresses.find((a) => a.type === 'ExternalIP') ?? addresses.find((a) => a.type === 'InternalIP'))?.address;
    return this.nodeAddressKnown;
  }

  /**
   * The control plane reaches the primary at its Service's cluster IP: it resolves no
   * cluster DNS where it runs outside the cluster, and kube-proxy routes that address from
   * the nodes and from pods alike. The app user is admitted from the cluster's networks.
   */
  async sqlTarget(db: ClusterRef): Promise<SqlTarget> {
    const ns = vpcNamespace(db.vpcId);
    const n = builtinNames(db.shortId);
    const [svc, secret] = await this.guard(() =>
      Promise.all([this.read<ServiceObject>('v1', 'Service', n.rw, ns), this.read<SecretObject>('v1', 'Secret', n.credentials, ns)]),
    );
    const host = svc?.spec?.clusterIP;
    const data = secret?.data;
    if (!host || !data?.password || !data.console) throw new ConflictError('the database has no server in the cluster', 'database_unavailable');
    const text = (k: string) => Buffer.from(data[k]!, 'base64').toString('utf8');
    return {
      engine: db.engine,
      host,
      port: ENGINE_PORT[db.engine],
      user: CONSOLE_USER,
      password: text('console'),
      database: db.shortId,
      app: { user: appUserOf(db.shortId), password: text('password') },
    };
  }

  // ---------- backups (the images' `pier-backup`, into the S3 store) ----------

  private requireStore(): S3Store {
    if (!this.opts.backupStore) throw backupsUnavailable();
    return this.opts.backupStore;
  }

  /** `pier-backup <args>` in the primary while it runs, else in a one-off pod of the engine's image. */
  private async backupTool(db: ClusterRef, args: string[], what: string): Promise<ExecResult> {
    const primary = await this.runningPrimary(db);
    if (primary) return this.execIn(db, primary, ['pier-backup', ...args], what);
    const store = this.requireStore();
    // The store's keys, for a database whose own Secret went with it.
    await this.applyObject(storeEnvSecret(db, store));
    const pod = backupToolPod(db, `${builtinNames(db.shortId).cluster}-backup-tool-${randomBytes(3).toString('hex')}`, args, this.settings);
    return succeeded(await this.pods.runToEnd(pod as V1Pod), what);
  }

  async startBackup(db: ClusterRef, name: string, method: BackupMethod): Promise<void> {
    this.requireStore();
    await this.guard(async () => {
      const primary = await this.runningPrimary(db);
      if (!primary) throw new ConflictError('the database server is not running; a backup needs it running', 'database_not_running');
      await this.execIn(db, primary, ['pier-backup', 'start', name, method], 'starting the backup');
    });
  }

  async listBackups(db: ClusterRef): Promise<RepositoryListing> {
    this.requireStore();
    return this.guard(async () => {
      const result = await this.backupTool(db, ['list'], 'reading the backup repository');
      return db.engine === 'postgresql' ? parsePostgresListing(result.stdout) : parseMysqlListing(result.stdout);
    });
  }

  async deleteBackup(db: ClusterRef, backup: { name: string; ref: string | null }): Promise<void> {
    this.requireStore();
    const args = db.engine === 'postgresql' ? ['delete', backup.name, backup.ref ?? '-'] : ['delete', backup.name];
    await this.guard(() => this.backupTool(db, args, 'deleting the backup'));
  }

  async purgeBackups(db: ClusterRef): Promise<void> {
    // Without a store no backup was ever written: there is nothing to purge.
    if (!this.opts.backupStore) return;
    await this.guard(async () => {
      await this.backupTool(db, ['purge'], 'purging the backup repository');
      // The store's Secret made for the one-off pods of a deleted database.
      const primary = await this.read('apps/v1', 'StatefulSet', builtinNames(db.shortId).primary, vpcNamespace(db.vpcId));
      if (!primary) await this.remove('v1', 'Secret', builtinNames(db.shortId).storeSecret, vpcNamespace(db.vpcId));
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.watched?.sets.stop(), this.watched?.pods.stop()]);
  }
}
