import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '@pier/kit';
import { slimPod, WatchCache } from '@pier/kit/kubernetes-watch-cache';
import { K8S_LABEL, POD_SELECTOR } from './kubernetes-manifests.ts';

// Compute's copy of every pod it runs, fed by a watch (kit's WatchCache): the reads of a
// VPC's state (a service list, the reconciler's observations, the sweep) take it from
// memory, and the sweep looks only at VPCs whose pods changed. Only what podUnit
// (kubernetes.ts) reads is kept of a pod (kit's slimPod).

/** The labels podUnit and groupWorkloads read; the others are not kept. */
const READ_LABELS = [K8S_LABEL.service, K8S_LABEL.name, K8S_LABEL.deployment, K8S_LABEL.role];

/** The watch of compute's pods across every VPC's namespace. */
export function podCache(kc: KubeConfig, log: Logger): WatchCache<V1Pod> {
  return new WatchCache(kc, {
    apiVersion: 'v1',
    kind: 'Pod',
    path: '/api/v1/pods',
    labelSelector: POD_SELECTOR,
    slim: (raw) => slimPod(raw, READ_LABELS),
    log,
  });
}
