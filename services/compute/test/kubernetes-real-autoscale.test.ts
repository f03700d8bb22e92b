// Autoscaling on the REAL single-node Kubernetes (deploy/kube/cluster.sh runs metrics-server
// beside it): the HorizontalPodAutoscaler the kubernetes adapter writes for a service with
// max_replicas above its floor acts on real CPU. A worker that burns its CPU grows to
// exactly max_replicas; made idle, it goes back to its floor once the scale-down delay
// (PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS, the HPA's stabilization window) has passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createLogger, vpcNamespace } from '@pier/kit';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { autoscalerManifest } from '../src/cluster/kubernetes-manifests.ts';
import type { WorkloadSpec } from '../src/domain/cluster-port.ts';
import { until, TINY_HTTP } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
const scope = { workspaceId: randomUUID(), vpcId: randomUUID() };
const ns = vpcNamespace(scope.vpcId);
const DOWN_DELAY_SECONDS = 10;
let k: RealKubernetes;
let cluster: KubernetesCluster;

beforeAll(() => {
  k = realKubernetes();
  cluster = KubernetesCluster.fromKubeconfig(k.kubeconfig, log, undefined, { scaleDownDelaySeconds: DOWN_DELAY_SECONDS, cpuTargetPercent: 80 });
});

afterAll(async () => {
  if (k) await k.deleteNamespace(ns);
});

/** A worker of svc.nano (250m, requested and the limit) running `script` in busybox's sh. */
const worker = (script: string): WorkloadSpec =>
  workloadSpec(
    scope,
    { name: 'crunch', service_type: 'worker', min_replicas: 1, max_replicas: 3, command: ['/bin/busybox'], args: ['sh', '-c', script] },
    [],
    TINY_HTTP,
  );

const deployment = (s: WorkloadSpec) => k.get(`/apis/apps/v1/namespaces/${ns}/deployments/${s.serviceName}`);
const autoscaler = (s: WorkloadSpec) => k.get(`/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${s.serviceName}`);

describe('autoscaling on a real cluster', () => {
  it('writes the scale-down delay as the HPA stabilization window, and the CPU target', () => {
    expect(autoscalerManifest(worker(':'), { scaleDownDelaySeconds: 42, cpuTargetPercent: 60 }).spec).toMatchObject({
      minReplicas: 1,
      maxReplicas: 3,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }],
      behavior: { scaleDown: { stabilizationWindowSeconds: 42 } },
    });
  });

  it('scales a busy worker up to exactly max_replicas on real CPU, and an idle one back to its floor after the delay', async () => {
    k.requireNode();
    const busy = worker('while :; do :; done');
    const t0 = Date.now();
    await cluster.apply(busy);
    const up = await until(
      () => deployment(busy),
      (d) => d.spec.replicas === 3 && d.status?.readyReplicas === 3,
      150_000,
    );
    const upSeconds = (Date.now() - t0) / 1000;
    expect(up.spec.replicas).toBe(3);
    const hpa = await autoscaler(busy);
    // It acted on what metrics-server measured, and never went past max_replicas.
    expect(hpa.status.currentMetrics?.[0]?.resource?.name).toBe('cpu');
    expect(hpa.status.currentMetrics[0].resource.current.averageUtilization).toBeGreaterThan(80);
    expect(hpa.status.desiredReplicas).toBe(3);

    // The same service, idle: a rollout to pods that sleep; the HPA keeps the count until
    // the load has stayed low for the window.
    const idle = { ...busy, deploymentId: randomUUID(), config: { ...busy.config, args: ['sh', '-c', 'exec sleep 3600'] } };
    const t1 = Date.now();
    await cluster.apply(idle);
    const down = await until(
      () => deployment(idle),
      (d) => d.spec.replicas === 1,
      180_000,
    );
    const downSeconds = (Date.now() - t1) / 1000;
    expect(down.spec.replicas).toBe(1);
    expect(downSeconds).toBeGreaterThanOrEqual(DOWN_DELAY_SECONDS);
    console.log(`real HPA: 1 -> 3 replicas in ${upSeconds.toFixed(0)} s of CPU load; 3 -> 1 in ${downSeconds.toFixed(0)} s once idle`);
  }, 360_000);
});
