// Service metrics' CPU and memory on the REAL single-node Kubernetes: the kubernetes usage
// port (kubernetes-usage.ts) reads metrics-server's PodMetrics (deploy/kube/cluster.sh runs
// metrics-server beside the cluster) for compute's pods, cluster-wide, by compute's selector.
// A worker that burns CPU reads as using CPU; both pods read with a working set in memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createLogger, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesUsage } from '../src/cluster/kubernetes-usage.ts';
import { until, TINY_HTTP } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
let k: RealKubernetes;

beforeAll(() => {
  k = realKubernetes();
});

afterAll(async () => {
  if (k) await k.deleteNamespace(vpcNamespace(scope.vpcId));
});

describe("service metrics' usage on a real cluster", () => {
  it("reads each running pod's CPU and memory from metrics-server: a busy worker uses CPU, an idle web service little", async () => {
    k.requireNode();
    const cluster = KubernetesCluster.fromKubeconfig(k.kubeconfig, log);
    const busy = workloadSpec(
      scope,
      { name: 'burn', service_type: 'worker', command: ['/bin/busybox'], args: ['sh', '-c', 'while :; do :; done'] },
      [],
      TINY_HTTP,
    );
    const idle = workloadSpec(scope, { name: 'quiet', health_check_path: '/healthz' }, [], TINY_HTTP);
    await cluster.apply(busy);
    await cluster.apply(idle);
    const usage = new KubernetesUsage(kubeConfigFrom(k.kubeconfig));
    // metrics-server scrapes every 10 s and needs two scrapes of a new pod for a CPU rate.
    const seen = await until(
      () => usage.usage(),
      (all) => {
        const burn = all.find((u) => u.serviceId === busy.serviceId);
        return !!burn && (burn.cpuCores ?? 0) > 0.05 && all.some((u) => u.serviceId === idle.serviceId);
      },
      180_000,
      2000,
    );
    const burn = seen.find((u) => u.serviceId === busy.serviceId)!;
    const quiet = seen.find((u) => u.serviceId === idle.serviceId)!;
    // svc.nano is a quarter of a core, which the busy loop uses up to its limit.
    expect(burn.cpuCores).toBeGreaterThan(0.05);
    expect(burn.cpuCores).toBeLessThan(0.4);
    expect(quiet.cpuCores).not.toBeNull();
    expect(quiet.cpuCores!).toBeLessThan(burn.cpuCores!);
    for (const u of [burn, quiet]) {
      expect(u.memoryBytes).toBeGreaterThan(0);
      expect(u.replica).toMatch(new RegExp(`^${vpcNamespace(scope.vpcId)}/`));
    }
  });
});
