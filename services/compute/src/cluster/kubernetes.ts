import { type KubeConfig, KubernetesObjectApi, PatchStrategy, VersionApi, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { observed, type ClusterCallObserver } from './call-metrics.ts';
// Not re-exported by the package root; the generic object API serializes bodies through it.
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { clusterUnavailable, isKubernetesNotFound, kubernetesFault, vpcNamespace, type Logger } from '@pier/kit';
import { kubeConfigFrom, kubeletCatchingUp, kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import {
  WorkloadRejectedError,
  type ClusterPort,
  type ObserveResult,
  type ObserveTarget,
  type VpcScope,
  type Workload,
  type WorkloadRef,
  type WorkloadSpec,
} from '../domain/cluster-port.ts';
import { groupWorkloads, judge, MIN_READY_MS, type ReplicaUnit } from './replicas.ts';
import {
  K8S_LABEL,
  POD_SELECTOR,
  deploymentManifest,
  desiredObjects,
  DEFAULT_AUTOSCALING,
  type AutoscalingOptions,
  egressPolicyManifest,
  namespaceManifest,
  networkPolicyManifest,
  ownedObjects,
  podSecurityProblem,
  type Manifest,
} from './kubernetes-manifests.ts';
import type { Observation } from '../domain/services/status.ts';
import type { WatchCache } from '@pier/kit/kubernetes-watch-cache';
import { podCache } from './kubernetes-pod-cache.ts';

/** Field manager of compute's server-side applies. */
export const FIELD_MANAGER = 'pier-compute';

/** Waiting reasons that mean the pod will not start without someone changing something. */
const FAILING_REASONS = new Set([
  'CrashLoopBackOff',
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** API failures in our terms: unreachable (or a 5xx) is the caller's 503; a refusal is the workload's. */
export function kubernetesError(err: unknown, what: string): Error {
  const fault = kubernetesFault(err);
  if (fault?.kind === 'unreachable') return clusterUnavailable(`the cluster cannot be reached (kubernetes: ${fault.detail})`);
  if (fault?.kind === 'failed') return clusterUnavailable(`the cluster is not answering (kubernetes ${what}: ${fault.status})`);
  if (fault) return new WorkloadRejectedError(`kubernetes ${what}: ${fault.reason}`);
  return err instanceof Error ? err : new Error(String(err));
}

/** The client's model name for a manifest: `apps/v1` Deployment -> `V1Deployment`. */
/** Kubernetes' annotation for which pods a shrinking ReplicaSet deletes first (the lowest cost). */
const POD_DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';
const LEAVING_COST = '-1000';
/** How long a scale-down waits for the ReplicaSet to delete the pods over the count. */
const SCALE_DOWN_WAIT_MS = 15_000;

export function modelTypeOf(m: Manifest): string {
  const version = m.apiVersion.split('/').pop()!;
  return `${version.charAt(0).toUpperCase()}${version.slice(1)}${m.kind}`;
}

function podUnit(pod: V1Pod): ReplicaUnit {
  const labels = pod.metadata?.labels ?? {};
  const role = labels[K8S_LABEL.role] === 'run' ? 'run' : 'replica';
  const name = pod.metadata?.name ?? '?';
  const createdAt = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : 0;
  const unit = (state: ReplicaUnit['state'], message: string | null = null): ReplicaUnit => ({
    deploymentId: labels[K8S_LABEL.deployment] ?? null,
    role,
    state,
    message,
    createdAt,
  });
  const phase = pod.status?.phase;
  const statuses = pod.status?.containerStatuses ?? [];
  if (phase === 'Succeeded') return role === 'run' ? unit('done') : unit('failed', `pod ${name} exited`);
  if (phase === 'Failed') {
    const term = statuses.find((s) => s.state?.terminated)?.state?.terminated;
    return unit(
      'failed',
      `pod ${name} failed${term ? ` with exit code ${term.exitCode}${term.reason ? ` (${term.reason})` : ''}` : pod.status?.reason ? ` (${pod.status.reason})` : ''}`,
    );
  }
  for (const s of statuses) {
    const waiting = s.state?.waiting;
    if (waiting?.reason && FAILING_REASONS.has(waiting.reason) && !kubeletCatchingUp(waiting.message)) {
      return unit('failed', `pod ${name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`);
    }
  }
  if (pod.metadata?.deletionTimestamp) return unit('pending', `pod ${name} is terminating`);
  // No node fits it (resources, taints): pending, as the cluster may grow, with the scheduler's reason.
  const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable');
  if (unschedulable) return unit('pending', `pod ${name} cannot be scheduled: ${unschedulable.message ?? 'no node fits it'}`);
  if (role === 'replica') {
    for (const s of statuses) {
      // A replica's container that exited. While it backs off before the next restart the
      // kubelet (1.37) mostly reports it `terminated`, not `waiting: CrashLoopBackOff`.
      const exited = s.state?.terminated;
      if (exited) return unit('failed', `pod ${name}: its container exited with code ${exited.exitCode}${exited.reason ? ` (${exited.reason})` : ''}`);
      // Restarted in place after dying (killed on the node, out of memory): the pod stays,
      // so the restart is the only trace. It reads as failed, as a container killed on
      // Docker does, until it has been running (and ready) for MIN_READY_MS again.
      const before = s.lastState?.terminated;
      const startedAt = s.state?.running?.startedAt;
      if (before && (!s.ready || !startedAt || Date.now() - new Date(startedAt).getTime() < MIN_READY_MS)) {
        return unit(
          'failed',
          `pod ${name}: its container exited with code ${before.exitCode}${before.reason ? ` (${before.reason})` : ''} and was restarted (${s.restartCount} restarts)`,
        );
      }
    }
  }
  const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  if (!ready) return unit('pending', `pod ${name} is ${phase ?? 'Pending'} and not ready yet`);
  if (role === 'run') return unit('pending');
  // Without a readiness probe a pod is Ready as soon as it runs: hold it to the same
  // minimum uptime as on Docker, so an instant crash is not read as a success.
  const probed = pod.spec?.containers?.some((c) => c.readinessProbe);
  const startedAt = statuses[0]?.state?.running?.startedAt;
  const up = startedAt ? Date.now() - new Date(startedAt).getTime() : 0;
  return probed || up >= MIN_READY_MS ? unit('ready') : unit('pending', `pod ${name} is starting`);
}

/** Deletes one object (its dependents in the background); false when there was none. */
export async function deleteObject(objects: KubernetesObjectApi, namespace: string, o: { apiVersion: string; kind: string; name: string }): Promise<boolean> {
  try {
    await objects.delete(
      { apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace } },
      undefined,
      undefined,
      undefined,
      undefined,
      'Background',
    );
    return true;
  } catch (err) {
    if (!isKubernetesNotFound(err)) throw kubernetesError(err, `delete ${o.kind}/${o.name}`);
    return false;
  }
}

/** One API call, its failure in our terms (kubernetesError): how every kubernetes adapter of compute calls. */
export async function kubernetesCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw kubernetesError(err, what);
  }
}

/** vpcNamespace(id) is this and the id: how a changed namespace names its VPC. */
const VPC_NAMESPACE_PREFIX = vpcNamespace('');

/** How long a VPC's namespace and policies, once applied, count as in place for `apply`. */
const VPC_ENSURED_MS = 30_000;

export class KubernetesCluster implements ClusterPort {
  readonly kind = 'kubernetes' as const;
  private readonly objects: KubernetesObjectApi;
  private readonly version: VersionApi;
  /** API requests made so far (discovery included). */
  calls = 0;
  /** When each VPC's namespace and policies were last applied by this instance. */
  private readonly vpcsEnsured = new Map<string, number>();
  /** The watch-fed copy of compute's pods (kubernetes-pod-cache.ts), when watching. */
  readonly pods?: WatchCache<V1Pod>;

  constructor(
    kc: KubeConfig,
    private readonly log: Logger,
    timeoutMs = 10_000,
    /** Told of each API call made through `call` (compute's /metrics). */
    private readonly observe?: ClusterCallObserver,
    private readonly autoscaling: AutoscalingOptions = DEFAULT_AUTOSCALING,
    /** Keep a watch-fed copy of the pods (start() starts it): reads of a VPC's state from memory. */
    watchPods = false,
  ) {
    const configuration = kubernetesApiConfiguration(kc, timeoutMs);
    this.objects = new KubernetesObjectApi(configuration);
    this.version = new VersionApi(configuration);
    if (watchPods) this.pods = podCache(kc, log);
  }

  /** From a kubeconfig file, or else the in-cluster service account / $KUBECONFIG. */
  static fromKubeconfig(
    path: string | undefined,
    log: Logger,
    observe?: ClusterCallObserver,
    autoscaling?: AutoscalingOptions,
    watchPods = false,
  ): KubernetesCluster {
    return new KubernetesCluster(kubeConfigFrom(path), log, undefined, observe, autoscaling, watchPods);
  }

  /** The pod watch, when kept; CronJobs and the Deployment controller live in the cluster. */
  start(): void {
    this.pods?.start();
  }

  async stop(): Promise<void> {
    await this.pods?.stop();
  }

  /** Which VPCs' pods changed since a cursor: known only while the pod watch is connected. */
  readonly changes = {
    cursor: (): number => this.pods?.cursor() ?? 0,
    vpcsChangedSince: (cursor: number): Set<string> | undefined => {
      const namespaces = this.pods?.changedSince(cursor);
      if (!namespaces) return undefined;
      return new Set([...namespaces].filter((n) => n.startsWith(VPC_NAMESPACE_PREFIX)).map((n) => n.slice(VPC_NAMESPACE_PREFIX.length)));
    },
  };

  /** The VPC's pods: from the watched copy when it is connected (no API call), else listed. */
  private async vpcPods(scope: VpcScope, tally?: { calls: number }): Promise<V1Pod[]> {
    const cached = this.pods?.items(vpcNamespace(scope.vpcId));
    if (cached) return cached;
    // The client's API discovery for `v1` happens once per process and is not counted.
    const list = await this.call(
      'list pods',
      () => this.objects.list<V1Pod>('v1', 'Pod', vpcNamespace(scope.vpcId), undefined, undefined, undefined, undefined, POD_SELECTOR),
      tally,
    );
    return list.items;
  }

  private async call<T>(what: string, fn: () => Promise<T>, tally?: { calls: number }): Promise<T> {
    this.calls++;
    if (tally) tally.calls++;
    try {
      return await observed(this.observe, what, fn);
    } catch (err) {
      throw kubernetesError(err, what);
    }
  }

  async ping(): Promise<void> {
    await this.call('version', () => this.version.getCode());
  }

  /** Server-side apply: creates or updates in one idempotent request, owning the fields we send. */
  private async serverSideApply(manifest: Manifest): Promise<void> {
    // The client serializes through its typed models, whose property names differ from the
    // wire names in places (NetworkPolicy's `from` is `_from`): hand it a typed object, so
    // what goes out is the manifest as written.
    const typed = ObjectSerializer.deserialize(manifest, modelTypeOf(manifest)) as KubernetesObject;
    await this.call(`apply ${manifest.kind}/${manifest.metadata.name}`, () =>
      this.objects.patch(typed, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  }

  /** Deletes one object; true when there was one to delete. */
  private async remove(namespace: string, o: { apiVersion: string; kind: string; name: string }): Promise<boolean> {
    this.calls++;
    return deleteObject(this.objects, namespace, o);
  }

  /**
   * The VPC's namespace, then both its policies (together), before any pod of it can start.
   * Once applied they are taken as there for VPC_ENSURED_MS: a burst of creates or a rollout
   * of many services in one VPC would apply the same three objects again for each, and an
   * unchanged apply still costs the API server most of a write (at 300 creates, these were
   * three of each create's five applies).
   */
  async ensureVpc(scope: VpcScope): Promise<void> {
    const ensured = this.vpcsEnsured.get(scope.vpcId);
    if (ensured !== undefined && Date.now() - ensured <= VPC_ENSURED_MS) return;
    await this.serverSideApply(namespaceManifest(scope));
    await Promise.all([this.serverSideApply(networkPolicyManifest(scope)), this.serverSideApply(egressPolicyManifest(scope))]);
    this.vpcsEnsured.set(scope.vpcId, Date.now());
  }

  async apply(spec: WorkloadSpec): Promise<void> {
    const problem = podSecurityProblem(spec);
    if (problem) throw new WorkloadRejectedError(problem);
    await this.ensureVpc(spec);
    const { apply, remove } = desiredObjects(spec, this.autoscaling);
    // A claim before the workload that mounts it; the workload, its Service and its autoscaler
    // need nothing of each other, so they go together (a Service's apply, which allocates its
    // address, was the slowest of a create's calls at scale).
    for (const m of apply.filter((m) => m.kind === 'PersistentVolumeClaim')) await this.serverSideApply(m);
    await Promise.all(apply.filter((m) => m.kind !== 'PersistentVolumeClaim').map((m) => this.serverSideApply(m)));
    // A service that changed type (or dropped its port, autoscaler or disk) loses those objects.
    for (const o of remove) {
      if (await this.remove(vpcNamespace(spec.vpcId), o))
        this.log.info({ service: spec.serviceId, kind: o.kind, name: o.name }, 'removed an object the service no longer needs');
    }
  }

  /**
   * The elastic controller's scale (sleep, wake and autoscaling on requests): the Deployment
   * applied again with that many replicas, the object a rollout writes, so nothing else of
   * it changes. Shrinking, the pods the activator drained (from index `replicas` up, in
   * replicaAddresses' order) are marked with a low pod-deletion-cost first, so the
   * ReplicaSet stops those and not a pod with requests in flight. Resolves once the pods
   * over the count are going (deleted), so the activator's next listing no longer has them.
   */
  async scale(spec: WorkloadSpec, replicas: number): Promise<void> {
    if (replicas > 0) await this.markLeaving(spec, replicas);
    await this.serverSideApply(deploymentManifest({ ...spec, replicas }));
    const deadline = Date.now() + SCALE_DOWN_WAIT_MS;
    while ((await this.runningPods(spec.serviceId, spec.vpcId)).length > replicas && Date.now() < deadline) await sleep(200);
  }

  /** The service's running pods that are not going away, in a stable order (by uid). */
  private async runningPods(serviceId: string, vpcId: string): Promise<V1Pod[]> {
    const selector = `${POD_SELECTOR},${K8S_LABEL.service}=${serviceId}`;
    const list = await this.call('list pods', () =>
      this.objects.list<V1Pod>('v1', 'Pod', vpcNamespace(vpcId), undefined, undefined, undefined, undefined, selector),
    );
    return list.items
      .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running' && p.status.podIP)
      .sort((a, b) => (a.metadata?.uid ?? '').localeCompare(b.metadata?.uid ?? ''));
  }

  /** Pods from index `keep` up get the deletion cost that makes the ReplicaSet stop them first; the others lose it. */
  private async markLeaving(spec: WorkloadSpec, keep: number): Promise<void> {
    const pods = await this.runningPods(spec.serviceId, spec.vpcId);
    for (const [index, pod] of pods.entries()) {
      const leaving = index >= keep;
      if (leaving === (pod.metadata?.annotations?.[POD_DELETION_COST] !== undefined)) continue;
      // Applied as compute's own field: applying it again without the annotation removes it.
      const mark: Manifest = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, annotations: leaving ? { [POD_DELETION_COST]: LEAVING_COST } : {} },
      };
      // A pod that went meanwhile needs no mark; the scale goes on either way.
      await this.serverSideApply(mark).catch((err: unknown) =>
        this.log.warn({ service: spec.serviceId, pod: mark.metadata.name, err: String(err) }, 'could not mark a pod to be stopped first'),
      );
    }
  }

  /** The service's running pods that are not going away, with their addresses: where the activator sends requests. */
  async replicaAddresses(serviceId: string, vpcId: string): Promise<{ id: string; index: number; address: string }[]> {
    return (await this.runningPods(serviceId, vpcId)).map((p, index) => ({ id: p.metadata!.uid ?? p.metadata!.name!, index, address: p.status!.podIP! }));
  }

  async observeMany(scope: VpcScope, targets: ObserveTarget[]): Promise<ObserveResult> {
    // Pods alone tell the state of every service in the VPC, cron runs included: one request,
    // or none while the pod watch is connected.
    const tally = { calls: 0 };
    const pods = await this.vpcPods(scope, tally);
    const byService = new Map<string, ReplicaUnit[]>();
    for (const pod of pods) {
      const id = pod.metadata?.labels?.[K8S_LABEL.service];
      if (id) (byService.get(id) ?? byService.set(id, []).get(id)!).push(podUnit(pod));
    }
    const observations = new Map<string, Observation>();
    for (const t of targets) {
      observations.set(t.serviceId, judge(t, byService.get(t.serviceId) ?? [], { missingIsFailure: false, cronNeedsTemplate: false }));
    }
    return { observations, calls: tally.calls };
  }

  async workloads(scope: VpcScope): Promise<Workload[]> {
    const pods = await this.vpcPods(scope);
    return groupWorkloads(
      scope,
      pods.map((p) => p.metadata?.labels ?? {}),
      { service: K8S_LABEL.service, name: K8S_LABEL.name, deployment: K8S_LABEL.deployment },
    );
  }

  async delete(ref: WorkloadRef): Promise<void> {
    // The edge's Ingress too: the edge removes it when the service leaves the routing table,
    // but only if this process applied it.
    const ingress = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: ref.serviceName };
    for (const o of [...ownedObjects(ref), ingress]) await this.remove(vpcNamespace(ref.vpcId), o);
    // Claims a disk restore made have names of their own: found by the service's label.
    const ns = vpcNamespace(ref.vpcId);
    const selector = `${K8S_LABEL.service}=${ref.serviceId}`;
    const claims = await this.call('list claims', () =>
      this.objects.list('v1', 'PersistentVolumeClaim', ns, undefined, undefined, undefined, undefined, selector),
    );
    for (const c of claims.items) await this.remove(ns, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: c.metadata!.name! });
  }
}
