// The edge on the kubernetes adapter: the cluster's ingress controller routes, cert-manager
// issues and renews. Pier writes an Ingress per web service and a Certificate per custom
// domain, and reads the Certificate's Ready condition for the domain's TLS state. With the
// activator on (elastic-wiring.ts), the Ingress of an elastic web service (on_demand, or
// autoscaled on its requests) points at the activator's Service in its namespace, and the
// activator finds the service by Host through routeFor.
import { createHash } from 'node:crypto';
import { type KubeConfig, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { isKubernetesNotFound, vpcNamespace, type Logger } from '@pier/kit';
import { kubernetesApiConfiguration, listPages } from '@pier/kit/kubernetes';
import type { EdgeEntry, EdgePort, EdgeRoute, TlsOutcome } from '../domain/edge/edge-port.ts';
import { activatorTargets, type ActivatorTarget } from '../edge/activator.ts';
import {
  ACTIVATOR_SERVICE,
  activatorEndpointsManifest,
  activatorServiceManifest,
  certificateManifest,
  certificateName,
  ingressManifest,
  tlsSecretName,
  type ActivatorEndpoint,
  type IngressSettings,
} from './kubernetes-edge-manifests.ts';
import { FIELD_MANAGER, kubernetesCall } from './kubernetes.ts';
import { K8S_LABEL, MANAGED_BY, type Manifest } from './kubernetes-manifests.ts';

/** The hash of the Ingress as applied (without this annotation), kept on the Ingress itself. */
const APPLIED_HASH = 'pier.dev/applied-hash';

/** The edge's Ingresses, and no other (a Certificate has the same labels, but is another kind). */
const EDGE_SELECTOR = `${K8S_LABEL.managedBy}=${MANAGED_BY},${K8S_LABEL.kind}=edge`;

interface CertificateStatus {
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
  notAfter?: string;
  lastFailureTime?: string;
}

export class KubernetesEdge implements EdgePort {
  readonly kind = 'kubernetes' as const;
  private readonly objects: KubernetesObjectApi;
  /**
   * Each Ingress's hash as last applied (by this process, or by an earlier one: read from
   * the Ingresses' APPLIED_HASH at the first sync): an unchanged one is not sent again.
   */
  private readonly applied = new Map<string, string>();
  /**
   * Each service's route as the last sync saw it, by service id, with its Ingress's key and
   * the sync that last saw it: an unchanged route is not even turned into its manifest; one
   * that leaves the table loses its Ingress.
   */
  private readonly routes = new Map<string, { route: EdgeRoute; viaActivator: boolean; key: string; seen: number }>();
  private syncs = 0;
  private appliedRead = false;
  /** The activator's Service and EndpointSlice as last applied, by namespace. */
  private readonly activatorApplied = new Map<string, string>();
  /** The elastic services' hosts, as the last sync routed them to the activator. */
  private hosts = new Map<string, ActivatorTarget>();
  /** Where the activator listens (elastic-wiring.ts); null: none, every Ingress points at its service. */
  activator: ActivatorEndpoint | null = null;

  constructor(
    kc: KubeConfig,
    private readonly settings: IngressSettings & {
      addresses: string[];
      /** The ingress controller's HTTPS port at those addresses (443 unless it is published elsewhere). */
      httpsPort?: number;
      /** A CA its certificates chain to (a private one), for compute's own requests through it. */
      caPem?: string;
    },
    private readonly log: Logger,
  ) {
    this.objects = new KubernetesObjectApi(kubernetesApiConfiguration(kc, 10_000));
  }

  private apply(m: Manifest): Promise<unknown> {
    return kubernetesCall(`apply ${m.kind}/${m.metadata.name}`, () =>
      this.objects.patch(m as KubernetesObject, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  }

  private async remove(apiVersion: string, kind: string, namespace: string, name: string): Promise<void> {
    try {
      await this.objects.delete({ apiVersion, kind, metadata: { name, namespace } });
    } catch (err) {
      if (!isKubernetesNotFound(err)) await kubernetesCall(`delete ${kind}/${name}`, () => Promise.reject(err));
    }
  }

  /** The elastic service a request's Host names (the activator's `route`), or null. */
  routeFor(host: string): ActivatorTarget | null {
    return this.hosts.get(host) ?? null;
  }

  async sync(routes: EdgeRoute[]): Promise<void> {
    const activator = this.activator;
    const elastic = activator ? routes.filter((r) => r.activator) : [];
    // The activator's Service first, and removed last: no Ingress points at one that is not there.
    const activatorVpcs = new Set(elastic.map((r) => r.vpcId));
    await this.applyActivator(activatorVpcs, activator);
    this.hosts = activatorTargets(elastic);
    if (!this.appliedRead) await this.readApplied();
    // A sync runs after every create, rollout and delete: at 10,000 services, building and
    // hashing every Ingress each time took most of compute's CPU. Only the routes that
    // changed since the last sync are built now, and telling an unchanged one allocates
    // nothing (a string per route per sync was most of compute's allocations while creating).
    const sync = ++this.syncs;
    // Ingresses applied by this sync: a service gone since the last one may have had the
    // same name (deleted, and another created under it), and its Ingress is now the new one's.
    const built = new Set<string>();
    const stale: string[] = [];
    for (const r of routes) {
      const viaActivator = Boolean(activator && r.activator);
      const kept = this.routes.get(r.serviceId);
      if (kept && kept.viaActivator === viaActivator && sameRoute(kept.route, r) && this.applied.has(kept.key)) {
        kept.seen = sync;
        continue;
      }
      const key = `${vpcNamespace(r.vpcId)}/${r.serviceName}`;
      if (kept && kept.key !== key) stale.push(kept.key);
      built.add(key);
      const m = ingressManifest(r, this.settings, viaActivator);
      const hash = createHash('sha256').update(JSON.stringify(m)).digest('hex');
      if (this.applied.get(key) !== hash) {
        await this.apply({ ...m, metadata: { ...m.metadata, annotations: { [APPLIED_HASH]: hash } } });
        this.applied.set(key, hash);
      }
      this.routes.set(r.serviceId, { route: r, viaActivator, key, seen: sync });
    }
    // A service that left the table (deleted, or no longer a web service) loses its Ingress.
    // Only one this process routed: another compute's (a test beside it on one cluster) is
    // not in this table, and a service deleted while none ran lost its Ingress in its teardown
    // (the cluster's delete).
    for (const [serviceId, kept] of this.routes) {
      if (kept.seen === sync) continue;
      stale.push(kept.key);
      this.routes.delete(serviceId);
    }
    for (const key of stale) if (!built.has(key)) await this.removeIngress(key);
    await this.pruneActivator(activatorVpcs);
  }

  private async removeIngress(key: string): Promise<void> {
    const [namespace, name] = key.split('/') as [string, string];
    await this.remove('networking.k8s.io/v1', 'Ingress', namespace, name);
    this.applied.delete(key);
    this.log.info({ ingress: key }, 'removed the Ingress of a service no longer routed');
  }

  /**
   * The Ingresses an earlier compute applied, with the hash each was applied with: one paged
   * list at the first sync, where applying all of them again took a new compute (a restart,
   * a leader taking over) one request per web service. One without the hash (an older
   * compute's) is applied again.
   */
  private async readApplied(): Promise<void> {
    await kubernetesCall('list Ingress', () =>
      listPages(this.objects, { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', labelSelector: EDGE_SELECTOR }, (items) => {
        for (const i of items) this.applied.set(`${i.metadata!.namespace}/${i.metadata!.name}`, i.metadata?.annotations?.[APPLIED_HASH] ?? '');
      }),
    );
    this.appliedRead = true;
  }

  /** The activator's Service and EndpointSlice in each namespace of `vpcIds`. */
  private async applyActivator(vpcIds: Set<string>, activator: ActivatorEndpoint | null): Promise<void> {
    for (const vpcId of vpcIds) {
      const objects = [activatorServiceManifest(vpcId, activator!), activatorEndpointsManifest(vpcId, activator!)];
      const hash = createHash('sha256').update(JSON.stringify(objects)).digest('hex');
      if (this.activatorApplied.get(vpcNamespace(vpcId)) === hash) continue;
      for (const m of objects) await this.apply(m);
      this.activatorApplied.set(vpcNamespace(vpcId), hash);
    }
  }

  /** ... and in no other namespace. */
  private async pruneActivator(vpcIds: Set<string>): Promise<void> {
    const wanted = new Set([...vpcIds].map(vpcNamespace));
    for (const namespace of [...this.activatorApplied.keys()]) {
      if (wanted.has(namespace)) continue;
      await this.remove('discovery.k8s.io/v1', 'EndpointSlice', namespace, ACTIVATOR_SERVICE);
      await this.remove('v1', 'Service', namespace, ACTIVATOR_SERVICE);
      this.activatorApplied.delete(namespace);
    }
  }

  async addresses(): Promise<string[]> {
    return this.settings.addresses;
  }

  /** The ingress controller's first configured address; its certificates are public ones unless a CA was given. */
  async entry(): Promise<EdgeEntry | null> {
    const host = this.settings.addresses[0];
    return host ? { host, port: this.settings.httpsPort ?? 443, caPem: this.settings.caPem } : null;
  }

  async certify(route: EdgeRoute, hostname: string): Promise<TlsOutcome> {
    await this.apply(certificateManifest(route, hostname, this.settings));
    const cert = await kubernetesCall(`read Certificate/${certificateName(hostname)}`, () =>
      this.objects.read({
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: { name: certificateName(hostname), namespace: vpcNamespace(route.vpcId) },
      }),
    );
    return outcomeOf((cert as { status?: CertificateStatus }).status, this.settings.clusterIssuer);
  }

  async removeCertificate(route: Pick<EdgeRoute, 'vpcId' | 'serviceName'>, hostname: string): Promise<void> {
    const namespace = vpcNamespace(route.vpcId);
    await this.remove('cert-manager.io/v1', 'Certificate', namespace, certificateName(hostname));
    await this.remove('v1', 'Secret', namespace, tlsSecretName(hostname));
  }
}

/** cert-manager's Ready condition in the domain's terms. */
export function outcomeOf(status: CertificateStatus | undefined, issuer: string): TlsOutcome {
  const ready = status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True' && status?.notAfter) return { status: 'issued', issuer, expiresAt: new Date(status.notAfter) };
  if (ready?.status === 'False' && status?.lastFailureTime)
    return { status: 'failed', error: `cert-manager: ${ready.message ?? ready.reason ?? 'issuance failed'}` };
  return { status: 'pending', detail: ready?.message ?? 'cert-manager has not reported on the certificate yet' };
}

function sameList(x: string[], y: string[]): boolean {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** Whether two routes of one service make the same Ingress: every field of EdgeRoute, compared without allocating. */
function sameRoute(a: EdgeRoute, b: EdgeRoute): boolean {
  return (
    a.workspaceId === b.workspaceId &&
    a.vpcId === b.vpcId &&
    a.serviceName === b.serviceName &&
    a.port === b.port &&
    a.serviceHost === b.serviceHost &&
    sameList(a.customHosts, b.customHosts) &&
    sameList(a.tlsHosts, b.tlsHosts) &&
    (a.activator === null ? b.activator === null : b.activator !== null && a.activator.healthPath === b.activator.healthPath)
  );
}
