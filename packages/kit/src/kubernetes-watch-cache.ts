import { KubernetesObjectApi, Watch, type KubeConfig, type V1ContainerStatus, type V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from './logger.ts';
import { kubernetesApiConfiguration, listPages } from './kubernetes.ts';

// A watch-fed copy of one kind of object across the cluster, under a label selector: what
// Kubernetes controllers call an informer. Reads of a namespace come from memory instead of
// a list request each (a list of a VPC's pods took 24–100 ms of the API server at 1,000
// services), and loops ask which namespaces changed since they last looked, so their cost
// follows the changes rather than the number of objects.
//
// It lists once (in pages), then watches from the list's resourceVersion with bookmarks. A
// watch the server ends is resumed from the last resourceVersion seen; one the server no
// longer has history for (410 Gone) is replaced by a new list. While it is not connected
// the copy is not trusted: `items` answers undefined and callers read the cluster live. A
// kind the server does not serve (404: an operator's CRD not installed) has no objects: the
// copy is empty and trusted, and the kind is looked for again every minute.

/** What is kept of each object: a small projection, not the object (memory at 10,000 pods). */
export type Slim<T> = (raw: RawObject) => T;
export type RawObject = { metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } } & Record<string, unknown>;

export interface WatchCacheOptions<T> {
  /** `v1`, `apps/v1`... */
  apiVersion: string;
  kind: string;
  /** The cluster-wide path watched: `/api/v1/pods`, `/apis/apps/v1/statefulsets`. */
  path: string;
  labelSelector: string;
  slim: Slim<T>;
  log: Logger;
  /** Page size of the list (the API server's default has no limit). */
  pageSize?: number;
  /** The longest wait between reconnect attempts. */
  maxBackoffMs?: number;
}

/** How often a kind the server does not serve is looked for again (its CRD installed since). */
const ABSENT_RECHECK_MS = 60_000;

/** The server-side timeout of one watch: the API server's default range, so many clients do not reconnect together. */
const watchSeconds = () => 240 + Math.floor(Math.random() * 120);

export class WatchCache<T> {
  private readonly objects: KubernetesObjectApi;
  private readonly watcher: Watch;
  /** namespace -> uid -> projection. */
  private byNamespace = new Map<string, Map<string, T>>();
  /** namespace -> the change counter's value at its last change. */
  private readonly changedAt = new Map<string, number>();
  private counter = 0;
  private resourceVersion?: string;
  private connected = false;
  private stopped = true;
  private controller?: AbortController;
  /** Ends the watch under way at once, even before its request is answered (stop). */
  private endWatch?: () => void;
  private loop?: Promise<void>;
  /** Ends a wait between attempts at once (stop). */
  private stopping = new AbortController();
  /** Logged once: the kind is not served. */
  private absentSaid = false;
  /** Resolves the first time the copy is complete (for tests and start-up). */
  private syncedOnce!: Promise<void>;
  private markSynced!: () => void;

  constructor(
    kc: KubeConfig,
    private readonly options: WatchCacheOptions<T>,
  ) {
    // A page of a list may take a while on a large cluster; the watch itself has no deadline.
    this.objects = new KubernetesObjectApi(kubernetesApiConfiguration(kc, 60_000));
    this.watcher = new Watch(kc);
    this.syncedOnce = new Promise((resolve) => (this.markSynced = resolve));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.connected = false;
    this.controller?.abort();
    this.endWatch?.();
    await this.loop;
  }

  /** Waits until the copy is complete, at most `ms`; true when it is. */
  async synced(ms: number): Promise<boolean> {
    if (this.connected) return true;
    return Promise.race([this.syncedOnce.then(() => true), sleep(ms).then(() => false)]);
  }

  /** The namespace's objects, or undefined when the copy cannot be trusted now (read the cluster instead). */
  items(namespace: string): T[] | undefined {
    if (!this.connected) return undefined;
    return [...(this.byNamespace.get(namespace)?.values() ?? [])];
  }

  /** Where the change counter stands: pass it to `changedSince` later. */
  cursor(): number {
    return this.counter;
  }

  /**
   * The namespaces whose objects changed after `cursor`, or undefined when that cannot be
   * told (not connected: anything may have changed). A new list counts as a change everywhere.
   */
  changedSince(cursor: number): Set<string> | undefined {
    if (!this.connected) return undefined;
    const changed = new Set<string>();
    for (const [namespace, at] of this.changedAt) if (at > cursor) changed.add(namespace);
    return changed;
  }

  private changed(namespace: string): void {
    this.changedAt.set(namespace, ++this.counter);
  }

  private async run(): Promise<void> {
    let backoff = 500;
    const max = this.options.maxBackoffMs ?? 10_000;
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        await this.watchOnce();
        backoff = 500;
      } catch (err) {
        this.connected = false;
        if (this.stopped) break;
        if (statusOf(err) === 410) {
          this.resourceVersion = undefined;
          continue;
        }
        if (statusOf(err) === 404 && this.resourceVersion === undefined) {
          this.absent();
          await sleep(ABSENT_RECHECK_MS, undefined, { signal: this.stopping.signal }).catch(() => undefined);
          continue;
        }
        if (statusOf(err) === 405) {
          // A server without watches (the test fake unless asked for them): every read stays live.
          this.options.log.info({ kind: this.options.kind }, 'the kubernetes API does not serve watches; reading the cluster live');
          return;
        }
        this.options.log.warn({ kind: this.options.kind, err: String(err), retryInMs: backoff }, 'kubernetes watch failed; reading the cluster live meanwhile');
        await sleep(backoff);
        backoff = Math.min(backoff * 2, max);
      }
    }
  }

  /** The kind is not served: it has no objects, which the copy says (trusted) until it is listed again. */
  private absent(): void {
    for (const namespace of this.byNamespace.keys()) this.changed(namespace);
    this.byNamespace = new Map();
    this.connected = true;
    this.markSynced();
    if (!this.absentSaid)
      this.options.log.info({ kind: this.options.kind }, 'the kubernetes API does not serve this kind (yet): none exist; looking again every minute');
    this.absentSaid = true;
  }

  /** A new copy from a list, swapped in whole; every namespace it touches counts as changed. */
  private async relist(): Promise<void> {
    const fresh = new Map<string, Map<string, T>>();
    const resourceVersion = await listPages(this.objects, this.options, (items) => {
      for (const item of items) put(fresh, item as unknown as RawObject, this.options.slim);
    });
    for (const namespace of new Set([...this.byNamespace.keys(), ...fresh.keys()])) this.changed(namespace);
    this.byNamespace = fresh;
    this.resourceVersion = resourceVersion ?? '0';
  }

  /** One watch, from the last resourceVersion, until the server ends it (resolves) or it fails (throws). */
  private async watchOnce(): Promise<void> {
    let failure: unknown;
    const ended = new Promise<void>((resolve) => {
      const done = (err: unknown) => {
        failure = err ?? failure;
        resolve();
      };
      this.endWatch = () => resolve();
      void this.watcher
        .watch(
          this.options.path,
          { labelSelector: this.options.labelSelector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: watchSeconds() },
          (type: string, object: RawObject) => {
            try {
              this.apply(type, object);
            } catch (err) {
              failure = err;
              this.controller?.abort();
            }
          },
          done,
        )
        .then((controller) => {
          this.controller = controller;
          // The request was answered (a refusal has called `done` already): events from here on.
          if (failure === undefined && !this.stopped) {
            this.connected = true;
            this.markSynced();
          }
          if (this.stopped) controller.abort();
        }, done);
    });
    await ended;
    // The copy stays trusted across a resumed watch: it starts from the last version seen.
    if (failure !== undefined && failure !== null && !this.stopped) throw failure;
  }

  private apply(type: string, object: RawObject): void {
    const version = object.metadata?.resourceVersion;
    if (type === 'ERROR') throw new WatchError(object);
    if (type === 'BOOKMARK') {
      if (version) this.resourceVersion = version;
      return;
    }
    const namespace = object.metadata?.namespace ?? '';
    if (type === 'DELETED') {
      this.byNamespace.get(namespace)?.delete(keyOf(object));
      if (this.byNamespace.get(namespace)?.size === 0) this.byNamespace.delete(namespace);
    } else put(this.byNamespace, object, this.options.slim);
    this.changed(namespace);
    if (version) this.resourceVersion = version;
  }
}

function keyOf(object: RawObject): string {
  return object.metadata?.uid ?? object.metadata?.name ?? '';
}

function put<T>(into: Map<string, Map<string, T>>, object: RawObject, slim: Slim<T>): void {
  const namespace = object.metadata?.namespace ?? '';
  (into.get(namespace) ?? into.set(namespace, new Map()).get(namespace)!).set(keyOf(object), slim(object));
}

/** A watch's ERROR event: a Status (410 when the version asked for is too old). */
class WatchError extends Error {
  readonly statusCode: number | undefined;
  constructor(status: Record<string, unknown>) {
    super(`watch error: ${String(status.message ?? status.reason ?? 'unknown')}`);
    this.statusCode = typeof status.code === 'number' ? status.code : undefined;
  }
}

function statusOf(err: unknown): number | undefined {
  const e = err as { statusCode?: number; code?: number } | undefined;
  return e?.statusCode ?? (typeof e?.code === 'number' ? e.code : undefined);
}

/**
 * The pod conditions the adapters read (Ready, and PodScheduled for an unschedulable pod);
 * a running pod has five, and the other three were an eighth of a kept pod's heap.
 */
const READ_CONDITIONS = new Set(['Ready', 'PodScheduled']);

/**
 * What the adapters read of a pod to judge it, and nothing else: names, labels, times,
 * phase, reason and message, the conditions read and container states, and whether a
 * container has a readiness probe. A pod's spec and managed fields stay out (a kept pod of a
 * real cluster costs about 1.4 KB of heap, against its 6 KB of JSON).
 */
export function slimPod(raw: RawObject, keepLabels?: readonly string[]): V1Pod {
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
      labels: keptLabels(meta.labels, keepLabels),
      creationTimestamp: meta.creationTimestamp,
      deletionTimestamp: meta.deletionTimestamp,
    },
    spec: { containers: (pod.spec?.containers ?? []).map((c) => ({ name: c.name, readinessProbe: c.readinessProbe ? {} : undefined })) },
    status: {
      phase: status.phase,
      reason: status.reason,
      message: status.message,
      podIP: status.podIP,
      conditions: (status.conditions ?? [])
        .filter((c) => READ_CONDITIONS.has(c.type))
        .map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
      containerStatuses: (status.containerStatuses ?? []).map(container),
    },
  } as V1Pod;
}

/** Only an object's names and labels (those named, when given): enough to say which database or service has one. */
export function slimLabels(
  raw: RawObject,
  keepLabels?: readonly string[],
): { metadata: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> } } {
  const meta = (raw.metadata ?? {}) as { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
  return { metadata: { name: meta.name, namespace: meta.namespace, uid: meta.uid, labels: keptLabels(meta.labels, keepLabels) } };
}

/**
 * The labels a reader uses, when it names them: the selector's own, the workspace's and VPC's
 * ids and Kubernetes' pod-template-hash are most of a pod's labels and read by nobody here.
 */
function keptLabels(labels: Record<string, string> | undefined, keep: readonly string[] | undefined): Record<string, string> | undefined {
  if (!labels || !keep) return labels;
  const kept: Record<string, string> = {};
  for (const k of keep) if (labels[k] !== undefined) kept[k] = labels[k];
  return kept;
}
