// CPU and memory of every running pod on kubernetes, for service metrics (domain/metrics):
// one list of the metrics.k8s.io PodMetrics that metrics-server serves (the kubelet's
// cAdvisor figures over its last window, usually 15 s), cluster-wide, by compute's pod
// selector (PodMetrics carry their pod's labels). CPU comes as a rate already (cores);
// memory is the working set, as `kubectl top` shows it. Compute's ClusterRole needs `list`
// on `pods` of the `metrics.k8s.io` group; without metrics-server the read fails (503) and
// the collector says so, every other figure unaffected.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { ReplicaUsage, UsagePort } from '../domain/metrics/metrics-port.ts';
import { kubernetesCall } from './kubernetes.ts';
import { K8S_LABEL, POD_SELECTOR } from './kubernetes-manifests.ts';
import { quantityBytes } from './kubernetes-snapshot-manifests.ts';

interface PodMetrics {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  containers?: { name?: string; usage?: { cpu?: string; memory?: string } }[];
}

const CPU_UNITS: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1 };

/** A CPU quantity (`250m`, `12345n`, `1`) in cores; null for anything else. */
export function quantityCores(q: unknown): number | null {
  const m = typeof q === 'string' ? /^(\d+(?:\.\d+)?)([num]?)$/.exec(q.trim()) : null;
  return m ? Number(m[1]) * CPU_UNITS[m[2] ?? '']! : null;
}

export class KubernetesUsage implements UsagePort {
  private readonly api: CustomObjectsApi;

  constructor(kc: KubeConfig, timeoutMs = 10_000) {
    this.api = new CustomObjectsApi(kubernetesApiConfiguration(kc, timeoutMs));
  }

  async usage(): Promise<ReplicaUsage[]> {
    const list = (await kubernetesCall('list pod metrics', () =>
      this.api.listClusterCustomObject({ group: 'metrics.k8s.io', version: 'v1beta1', plural: 'pods', labelSelector: POD_SELECTOR }),
    )) as { items?: PodMetrics[] };
    const out: ReplicaUsage[] = [];
    for (const p of list.items ?? []) {
      const serviceId = p.metadata?.labels?.[K8S_LABEL.service];
      if (!serviceId || !p.metadata?.name) continue;
      let cpu = 0;
      let memory = 0;
      let known = true;
      for (const c of p.containers ?? []) {
        const cores = quantityCores(c.usage?.cpu);
        if (cores === null) known = false;
        else cpu += cores;
        memory += quantityBytes(c.usage?.memory) ?? 0;
      }
      out.push({ serviceId, replica: `${p.metadata.namespace}/${p.metadata.name}`, cpuCores: known ? cpu : null, memoryBytes: memory });
    }
    return out;
  }
}
