// Service logs on Kubernetes: the pods of compute's selector, read through the API server's
// log subresource with timestamps (`readNamespacedPodLog`), and followed with client-node's
// `Log`. The API merges a container's stdout and stderr into one stream, so every line reads
// `stdout` here. Pods are found by listing: nothing to watch between two collection passes.
import { Writable } from 'node:stream';
import { CoreV1Api, Log, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { isKubernetesNotFound, kubernetesStatusOf, vpcNamespace } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { WorkloadRef } from '../domain/cluster-port.ts';
import type { LogLine, LogReplica, LogSource, RecentOptions } from '../domain/logs/log-port.ts';
import { timestampOf } from '../domain/logs/log-time.ts';
import { kubernetesCall, kubernetesError } from './kubernetes.ts';
import { K8S_LABEL, POD_SELECTOR } from './kubernetes-manifests.ts';
import { EntrySplitter, LineAssembler, LineBatches } from './log-lines.ts';

/** The one container of every pod compute runs (kubernetes-manifests.ts). */
const CONTAINER = 'app';
/** Phases whose container has (or had) output; a Pending pod's container has not started. */
const PRINTING = new Set(['Running', 'Succeeded', 'Failed']);

function replicaOf(pod: V1Pod): LogReplica | null {
  const labels = pod.metadata?.labels ?? {};
  const serviceId = labels[K8S_LABEL.service];
  const name = pod.metadata?.name;
  const namespace = pod.metadata?.namespace;
  if (!serviceId || !name || !namespace || !PRINTING.has(pod.status?.phase ?? '')) return null;
  return {
    key: `${namespace}/${name}`,
    serviceId,
    deploymentId: labels[K8S_LABEL.deployment] ?? null,
    replica: name,
    running: pod.status?.phase === 'Running',
  };
}

function podOf(replica: LogReplica): { namespace: string; name: string } {
  const [namespace, name] = replica.key.split('/') as [string, string];
  return { namespace, name };
}

/** The pod is gone (404), or the API server will not read its container's log any more (400). */
function isGone(err: unknown): boolean {
  return isKubernetesNotFound(err) || kubernetesStatusOf(err) === 400;
}

export class KubernetesLogSource implements LogSource {
  private readonly core: CoreV1Api;
  private readonly logs: Log;

  constructor(kc: KubeConfig, timeoutMs = 10_000) {
    this.core = new CoreV1Api(kubernetesApiConfiguration(kc, timeoutMs));
    this.logs = new Log(kc);
  }

  async replicas(): Promise<LogReplica[]> {
    const list = await kubernetesCall('list pods', () => this.core.listPodForAllNamespaces({ labelSelector: POD_SELECTOR }));
    return list.items.map(replicaOf).filter((r): r is LogReplica => r !== null);
  }

  async serviceReplicas(ref: WorkloadRef): Promise<LogReplica[]> {
    const list = await kubernetesCall('list pods', () =>
      this.core.listNamespacedPod({ namespace: vpcNamespace(ref.vpcId), labelSelector: `${POD_SELECTOR},${K8S_LABEL.service}=${ref.serviceId}` }),
    );
    return list.items
      .sort((a, b) => String(a.metadata?.creationTimestamp ?? '').localeCompare(String(b.metadata?.creationTimestamp ?? '')))
      .map(replicaOf)
      .filter((r): r is LogReplica => r !== null);
  }

  async recent(replica: LogReplica, opts: RecentOptions): Promise<LogLine[]> {
    const { namespace, name } = podOf(replica);
    // The API takes whole seconds back from now: ask a little more, keep what is recent enough.
    const sinceSeconds = opts.since ? Math.max(1, Math.ceil((Date.now() - opts.since.getTime()) / 1000) + 1) : undefined;
    let text: string;
    try {
      text = await this.core.readNamespacedPodLog({ name, namespace, container: CONTAINER, timestamps: true, tailLines: opts.tail, sinceSeconds });
    } catch (err) {
      // Gone since it was listed, or not started yet: nothing to show.
      if (isGone(err)) return [];
      throw kubernetesError(err, 'read pod log');
    }
    const lines: LogLine[] = [];
    const assembler = new LineAssembler('stdout', replica, (l) => lines.push(l));
    const splitter = new EntrySplitter((entry) => assembler.entry(entry));
    splitter.write(Buffer.from(text, 'utf8'));
    splitter.end();
    assembler.end();
    const from = opts.since ? timestampOf(opts.since) : '';
    return lines.filter((l) => l.ts >= from);
  }

  follow(replica: LogReplica, after: string | null, signal: AbortSignal): AsyncIterable<LogLine[]> {
    const { namespace, name } = podOf(replica);
    const batches = new LineBatches();
    const assembler = new LineAssembler('stdout', replica, batches.push);
    const splitter = new EntrySplitter((entry) => assembler.entry(entry));
    const finish = (err?: unknown) => {
      splitter.end();
      assembler.end();
      batches.end(err);
    };
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        splitter.write(chunk);
        // The response is piped here: holding the callback holds the API server's stream.
        batches.room(() => done());
      },
      final(done) {
        finish();
        done();
      },
    });
    // `sinceTime` has whole seconds: lines of that second come again, and the collector skips them.
    const sinceTime = after ? `${after.slice(0, 19)}Z` : undefined;
    this.logs.log(namespace, name, CONTAINER, sink, { follow: true, timestamps: true, sinceTime }).then(
      (controller) => {
        if (signal.aborted) controller.abort();
        else signal.addEventListener('abort', () => controller.abort(), { once: true });
      },
      (err: unknown) => finish(signal.aborted || isGone(err) ? undefined : kubernetesError(err, 'follow pod log')),
    );
    signal.addEventListener('abort', () => finish(), { once: true });
    return batches;
  }

  watch(): void {}
}
