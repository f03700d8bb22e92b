import { ApiException, type KubeConfig, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { vpcNamespace, UnavailableError, ConflictError } from '@pier/kit';
import { kubeConfigFrom, kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { ClusterCapabilities } from '../domain/capabilities.ts';
import { appUserOf, CONSOLE_USER, shortIdOf, type Engine } from '../domain/database.ts';
import type { ExternalDomains } from '../domain/context.ts';
import type { Observation } from '../domain/status.ts';
import { observeCnpg, observeMoco, type K8sObject } from './kubernetes-observe.ts';
import type { ClusterDatabase, ClusterRef, Credentials, DatabaseCluster, Endpoints, SqlTarget } from '../domain/cluster-port.ts';
import {
  CNPG,
  MOCO,
  LABELS,
  SELECTOR,
  cnpgCluster,
  cnpgPooler,
  credentialSecret,
  externalService,
  mocoCluster,
  mocoInitJob,
  names,
  namespaceManifest,
  type KubernetesSettings,
  type Manifest,
} from './kubernetes-manifests.ts';

// The production adapter: CloudNativePG for postgresql, MOCO for mysql, objects applied
// with server-side apply (idempotent, so `apply` converges whatever state it finds).

const FIELD_MANAGER = 'pier-databases';

const CAPABILITIES: ClusterCapabilities = {
  adapter: 'kubernetes',
  engines: {
    // CloudNativePG's supported majors; `replicas` = read replicas (instances - 1).
    postgresql: { versions: ['13', '14', '15', '16', '17'], defaultVersion: '16', server: 'PostgreSQL', replicas: { min: 0, max: 8, default: 0 } },
    // MOCO runs MySQL 8.0 and 8.4; `replicas` = instances, 1, 3 or 5.
    mysql: { versions: ['8.0', '8.4'], defaultVersion: '8.4', server: 'MySQL', replicas: { min: 1, max: 5, default: 1 } },
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
}

const password = () => randomBytes(24).toString('hex');

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : (err as { code?: number })?.code;
}

export class KubernetesCluster implements DatabaseCluster {
  readonly capabilities = CAPABILITIES;
  private readonly api: KubernetesObjectApi;
  private readonly settings: KubernetesSettings;

  constructor(
    kc: KubeConfig,
    private readonly opts: KubernetesClusterOptions,
  ) {
    this.api = new KubernetesObjectApi(kubernetesApiConfiguration(kc, opts.timeoutMs));
    this.settings = {
      storageClass: opts.storageClass,
      clusterNetworks: opts.clusterNetworks ?? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
      postgresImage: (v) => `ghcr.io/cloudnative-pg/postgresql:${PG_IMAGES[v] ?? v}`,
      mysqlImage: (v) => `ghcr.io/cybozu-go/moco/mysql:${MYSQL_IMAGES[v] ?? v}`,
    };
  }

  static fromKubeconfig(file: string | undefined, opts: KubernetesClusterOptions): KubernetesCluster {
    return new KubernetesCluster(kubeConfigFrom(file), opts);
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if ((err as { name?: string })?.name === 'PierError') throw err;
      if (err instanceof ApiException) {
        // The API server failing, or refusing our credentials, is the cluster being unavailable to us.
        if (err.code >= 500 || err.code === 401 || err.code === 403) {
          throw new UnavailableError(`kubernetes API answered ${err.code}`, 'cluster_unavailable');
        }
        throw err;
      }
      throw new UnavailableError(`kubernetes API unreachable: ${(err as Error)?.message ?? err}`, 'cluster_unavailable');
    }
  }

  private async applyObject(m: Manifest): Promise<void> {
    const installation = this.opts.installation;
    const labelled =
      installation && m.kind !== 'Namespace' ? { ...m, metadata: { ...m.metadata, labels: { ...m.metadata.labels, [LABELS.installation]: installation } } } : m;
    await this.api.patch(labelled as KubernetesObject, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  private async read<T extends KubernetesObject>(apiVersion: string, kind: string, name: string, namespace: string): Promise<T | undefined> {
    try {
      return (await this.api.read({ apiVersion, kind, metadata: { name, namespace } })) as T;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  private async remove(apiVersion: string, kind: string, name: string, namespace: string): Promise<void> {
    try {
      await this.api.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, undefined, undefined, 'Background');
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  async ping(): Promise<void> {
    await this.guard(() => this.api.list('v1', 'Namespace', undefined, undefined, undefined, undefined, undefined, undefined, 1));
  }

  /** A credential Secret is created once; its password is never regenerated. */
  private async ensureSecret(db: ClusterDatabase, name: string, username: string): Promise<void> {
    if (await this.read('v1', 'Secret', name, vpcNamespace(db.vpcId))) return;
    await this.applyObject(credentialSecret(db, name, username, password()));
  }

  async apply(db: ClusterDatabase): Promise<void> {
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const n = names(db.shortId);
      await this.applyObject(namespaceManifest(db.vpcId));
      await this.ensureSecret(db, n.appSecret, appUserOf(db.shortId));
      await this.ensureSecret(db, n.consoleSecret, CONSOLE_USER);
      if (db.engine === 'postgresql') {
        await this.applyObject(cnpgCluster(db, this.settings));
        await this.applyObject(cnpgPooler(db, 'rw'));
        // A read-only pooler needs replicas behind the -ro service.
        if (db.replicas > 0) await this.applyObject(cnpgPooler(db, 'ro'));
        else await this.remove(CNPG, 'Pooler', n.poolerRo, ns);
      } else {
        await this.applyObject(mocoCluster(db, this.settings));
        await this.applyObject(mocoInitJob(db, this.settings));
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
        if (statusOf(err) === 404) return [];
        throw err;
      }
    };
    // One list per kind for the whole VPC, never one call per database.
    const [pg, my, jobs] = await this.guard(() => Promise.all([list(CNPG, 'Cluster'), list(MOCO, 'MySQLCluster'), list('batch/v1', 'Job')]));
    const byId = (items: K8sObject[]) => new Map(items.map((o) => [o.metadata?.labels?.[LABELS.database] ?? '', o]));
    const pgById = byId(pg);
    const myById = byId(my);
    const jobById = byId(jobs);
    const out = new Map<string, Observation>();
    for (const id of ids) {
      const c = pgById.get(id);
      const m = myById.get(id);
      out.set(id, c ? observeCnpg(c) : m ? observeMoco(m, jobById.get(id)) : { phase: 'absent' });
    }
    return out;
  }

  async delete(db: ClusterRef): Promise<void> {
    await this.guard(async () => {
      const ns = vpcNamespace(db.vpcId);
      const n = names(db.shortId);
      await this.remove('v1', 'Service', n.external, ns);
      await this.remove('v1', 'Service', n.externalRo, ns);
      if (db.engine === 'postgresql') {
        await this.remove(CNPG, 'Pooler', n.poolerRw, ns);
        await this.remove(CNPG, 'Pooler', n.poolerRo, ns);
        // The operator owns the instances' PVCs: deleting the Cluster removes the data.
        await this.remove(CNPG, 'Cluster', n.cluster, ns);
      } else {
        await this.remove('batch/v1', 'Job', n.initJob, ns);
        await this.remove(MOCO, 'MySQLCluster', n.cluster, ns);
      }
      await this.remove('v1', 'Secret', n.appSecret, ns);
      await this.remove('v1', 'Secret', n.consoleSecret, ns);
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
    ];
    const lists = await this.guard(() =>
      Promise.all(
        kinds.map(async ([apiVersion, kind]) => {
          try {
            // Every namespace at once: one call per kind.
            return (await this.api.list(apiVersion, kind, undefined, undefined, undefined, undefined, undefined, selector)).items as unknown as K8sObject[];
          } catch (err) {
            if (statusOf(err) === 404) return []; // an operator that is not installed
            throw err;
          }
        }),
      ),
    );
    const refs = new Map<string, ClusterRef>();
    for (const o of lists.flat()) {
      const labels = o.metadata?.labels ?? {};
      const id = labels[LABELS.database];
      const vpcId = labels[LABELS.vpc];
      const engine = labels[LABELS.engine];
      if (!id || !vpcId || (engine !== 'postgresql' && engine !== 'mysql')) continue;
      refs.set(id, { id, shortId: shortIdOf(id), vpcId, engine });
    }
    return [...refs.values()];
  }

  /** The first ingress address of a LoadBalancer Service; undefined until the cloud assigns one. */
  private async loadBalancerAddress(name: string, namespace: string): Promise<string | undefined> {
    type LbService = KubernetesObject & { status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } };
    const svc = await this.guard(() => this.read<LbService>('v1', 'Service', name, namespace));
    const ingress = svc?.status?.loadBalancer?.ingress?.[0];
    return ingress?.ip ?? ingress?.hostname ?? undefined;
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
      runAs: db.engine === ('postgresql' satisfies Engine) ? appUserOf(db.shortId) : undefined,
    };
  }

  async close(): Promise<void> {}
}
