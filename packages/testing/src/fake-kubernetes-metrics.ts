// The fake API's metrics.k8s.io/v1beta1 PodMetrics, as metrics-server serves them: a list
// (cluster-wide or of one namespace, with a label selector on the pods' labels) of the pods
// a test gave a usage with `podMetrics.set(namespace, pod, {cpu, memory})`, each with its
// pod's labels and one container `app`. Pods without a usage are left out, as metrics-server
// leaves out a pod the kubelet has not reported yet.

type Obj = Record<string, any>;

export interface PodUsage {
  /** A CPU quantity: `12m`, `250000n`, `1`. */
  cpu: string;
  /** A memory quantity: `30Mi`, `123456Ki`. */
  memory: string;
}

export class FakePodMetrics {
  private readonly usage = new Map<string, PodUsage>();

  set(namespace: string, pod: string, usage: PodUsage): void {
    this.usage.set(`${namespace}/${pod}`, usage);
  }

  /** The list for these pods (already filtered by namespace and selector). */
  list(pods: Obj[]): Obj {
    const items = pods.flatMap((p) => {
      const u = this.usage.get(`${p.metadata.namespace}/${p.metadata.name}`);
      if (!u) return [];
      return [
        {
          kind: 'PodMetrics',
          apiVersion: 'metrics.k8s.io/v1beta1',
          metadata: { name: p.metadata.name, namespace: p.metadata.namespace, labels: p.metadata.labels ?? {}, creationTimestamp: new Date().toISOString() },
          timestamp: new Date().toISOString(),
          window: '15s',
          containers: [{ name: 'app', usage: { cpu: u.cpu, memory: u.memory } }],
        },
      ];
    });
    return { kind: 'PodMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', metadata: {}, items };
  }
}
