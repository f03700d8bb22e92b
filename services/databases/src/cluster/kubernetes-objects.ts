import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { clusterUnavailable, isKubernetesNotFound, kubernetesFault, kubernetesStatusOf, UnavailableError } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import { LABELS, type Manifest } from './kubernetes-meta.ts';

// What both kubernetes modes of the databases adapter do with the API server: server-side
// apply under one field manager (idempotent, so an apply converges whatever it finds),
// the installation label on all they write, and the API server's failures as Pier's errors.

const FIELD_MANAGER = 'pier-databases';

export abstract class KubernetesObjects {
  protected readonly api: KubernetesObjectApi;

  constructor(
    kc: KubeConfig,
    /** Labelled on every object applied: `list` (the sweep) sees only objects carrying it. */
    protected readonly installation: string | undefined,
    timeoutMs?: number,
  ) {
    this.api = new KubernetesObjectApi(kubernetesApiConfiguration(kc, timeoutMs));
  }

  protected async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if ((err as { name?: string })?.name === 'PierError') throw err;
      const fault = kubernetesFault(err);
      if (fault && fault.kind !== 'unreachable') {
        // The API server failing, or refusing our credentials, is the cluster being unavailable to us.
        if ((fault.kind === 'failed' && fault.status !== 429) || fault.status === 401 || fault.status === 403) {
          throw clusterUnavailable(`kubernetes API answered ${fault.status}`);
        }
        // Any other answer is the cluster refusing what we sent (a webhook, a quota, an
        // object owned by someone else): nothing was done, and the client is told why, as
        // compute answers a cluster that cannot prepare a VPC; never a bare 500.
        throw new UnavailableError(`kubernetes refused the change (${fault.status}): ${fault.reason}`, 'cluster_error');
      }
      throw clusterUnavailable(`kubernetes API unreachable: ${fault?.detail ?? (err as Error)?.message ?? err}`);
    }
  }

  protected labelled(m: Manifest): Manifest {
    const installation = this.installation;
    return installation && m.kind !== 'Namespace'
      ? { ...m, metadata: { ...m.metadata, labels: { ...m.metadata.labels, [LABELS.installation]: installation } } }
      : m;
  }

  protected async applyObject(m: Manifest): Promise<void> {
    await this.api.patch(this.labelled(m) as KubernetesObject, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  /** Creates an object that must not change once made (a backup); one already there is kept as it is. */
  protected async createOnce(m: Manifest): Promise<void> {
    try {
      await this.api.create(this.labelled(m) as KubernetesObject, undefined, undefined, FIELD_MANAGER);
    } catch (err) {
      if (kubernetesStatusOf(err) !== 409) throw err;
    }
  }

  protected async listIn<T>(apiVersion: string, kind: string, namespace: string | undefined, selector: string): Promise<T[]> {
    return (await this.api.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, selector)).items as unknown as T[];
  }

  protected async read<T extends KubernetesObject>(apiVersion: string, kind: string, name: string, namespace: string): Promise<T | undefined> {
    try {
      return (await this.api.read({ apiVersion, kind, metadata: { name, namespace } })) as T;
    } catch (err) {
      if (isKubernetesNotFound(err)) return undefined;
      throw err;
    }
  }

  protected async remove(apiVersion: string, kind: string, name: string, namespace: string): Promise<void> {
    try {
      await this.api.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, undefined, undefined, 'Background');
    } catch (err) {
      if (!isKubernetesNotFound(err)) throw err;
    }
  }

  async ping(): Promise<void> {
    await this.guard(() => this.api.list('v1', 'Namespace', undefined, undefined, undefined, undefined, undefined, undefined, 1));
  }

  /** The first ingress address of a LoadBalancer Service; undefined until the cloud assigns one. */
  protected async loadBalancerAddress(name: string, namespace: string): Promise<string | undefined> {
    type LbService = KubernetesObject & { status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } };
    const svc = await this.guard(() => this.read<LbService>('v1', 'Service', name, namespace));
    const ingress = svc?.status?.loadBalancer?.ingress?.[0];
    return ingress?.ip ?? ingress?.hostname ?? undefined;
  }
}
