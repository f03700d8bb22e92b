// The cluster DNS of the REAL test cluster (CoreDNS, deploy/kube/cluster.sh): a service's
// pods reach another service of their VPC by its name, short (the namespace's search
// domain) and fully qualified, as on any real cluster, and a database's `-rw` Service
// would be reached the same way. The web service and the worker that asks it are what the
// kubernetes adapter writes for them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createLogger, vpcNamespace } from '@pier/kit';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { until, TINY_HTTP } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
const ns = vpcNamespace(scope.vpcId);
let k: RealKubernetes;
let cluster: KubernetesCluster;

beforeAll(() => {
  k = realKubernetes();
  cluster = KubernetesCluster.fromKubeconfig(k.kubeconfig, createLogger('test', 'warn'));
});

afterAll(async () => {
  if (k) await k.deleteNamespace(ns);
});

describe('cluster DNS on a real cluster', () => {
  it("resolves a service's name from another service's pod, short and fully qualified", async () => {
    k.requireNode();
    await cluster.apply(workloadSpec(scope, { name: 'named' }, [], TINY_HTTP));
    const full = `named.${ns}.svc.cluster.local`;
    // Asks until the web service answers, by each name, then idles.
    const script = `until wget -qO- http://named:8080/ && wget -qO- http://${full}:8080/; do sleep 1; done; echo asked-both; exec sleep 3600`;
    const asker = workloadSpec(scope, { name: 'asker', service_type: 'worker', command: ['/bin/busybox'], args: ['sh', '-c', script] }, [], TINY_HTTP);
    await cluster.apply(asker);
    const log = await until(
      async () => {
        const pods = await k.list(`/api/v1/namespaces/${ns}/pods`, `pier.dev/service=${asker.serviceId}`);
        if (!pods[0]) return '';
        const res = await k.request('GET', `/api/v1/namespaces/${ns}/pods/${pods[0].metadata.name}/log`);
        return res.status === 200 ? String(res.body.text ?? '') : '';
      },
      (text) => text.includes('asked-both'),
      90_000,
    );
    expect(log.match(/hello from pier\/tiny-http/g)?.length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
