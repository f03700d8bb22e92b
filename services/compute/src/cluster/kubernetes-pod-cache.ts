import type { KubeConfig, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '@pier/kit';
import { WatchCache, type RawObject } from '@pier/kit/kubernetes-watch-cache';
import { POD_SELECTOR } from './kubernetes-manifests.ts';

// Compute's copy of every pod it runs, fed by a watch (kit's WatchCache): the reads of a
// VPC's state (a service list, the reconciler's observations, the sweep) take it from
// memory, and the sweep looks only at VPCs whose pods changed.

/**
 * What podUnit (kubernetes.ts) and the sweep read of a pod, and nothing else: names, labels,
 * times, phase, conditions and container states. A pod's spec and managed fields stay out
 * (a kept pod costs well under 1 KB instead of several).
 */
export function slimPod(raw: RawObject): V1Pod {
  // The wire JSON has the model's field names (times are strings, which every reader passes to `new Date`).
  const pod = raw as V1Pod;
  const meta = pod.metadata ?? {};
  const status = pod.status ?? {};
  const container = (c: V1ContainerStatus) => ({ name: c.name, ready: c.ready, restartCount: c.restartCount, state: c.state, lastState: c.lastState });
  return {
    metadata: {
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      labels: meta.labels,
      creationTimestamp: meta.creationTimestamp,
      deletionTimestamp: meta.deletionTimestamp,
    },
    // Only whether a container has a readiness probe is read (podUnit's minimum uptime).
    spec: { containers: (pod.spec?.containers ?? []).map((c) => ({ name: c.name, readinessProbe: c.readinessProbe ? {} : undefined })) },
    status: {
      phase: status.phase,
      reason: status.reason,
      podIP: status.podIP,
      conditions: (status.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
      containerStatuses: (status.containerStatuses ?? []).map(container),
    },
  } as V1Pod;
}

/** The watch of compute's pods across every VPC's namespace. */
export function podCache(kc: KubeConfig, log: Logger): WatchCache<V1Pod> {
  return new WatchCache(kc, { apiVersion: 'v1', kind: 'Pod', path: '/api/v1/pods', labelSelector: POD_SELECTOR, slim: slimPod, log });
}
