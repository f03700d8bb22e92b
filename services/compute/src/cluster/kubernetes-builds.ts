// Builds on Kubernetes: a Job per build (kubernetes-build-manifests.ts) whose pod builds the
// image with rootless BuildKit, then pushes it to the configured registry from a second
// container that alone holds the push credentials; the service's deployments pull it from
// there by the digest the push reported (`<registry>/<service>:<build>@sha256:...`), so what
// runs is exactly what this build pushed, whatever happens to the tag later. The source is fetched and checked in compute exactly as on Docker
// (git-source.ts, or the validated upload), packed into a context tar, and streamed into the
// build pod through the exec subresource (as `kubectl cp` does), so the URL guard stays in
// one place and the pod needs no way back to compute.
//
// Jobs run on without compute: after a restart a build whose source was delivered is
// followed again (its status and the pod's log); one whose source never arrived cannot be.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  Exec,
  KubernetesObjectApi,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
  type V1ContainerStatus,
  type V1Job,
  type V1Pod,
  type V1Status,
} from '@kubernetes/client-node';
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { isKubernetesNotFound, type Logger, type UrlGuard } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import { BuildFailedError, type BuilderPort, type BuildIo, type BuildRequest, type BuildTarget } from '../domain/builds/builder-port.ts';
import { packContext } from './build-context.ts';
import { fetchRepository } from './git-source.ts';
import { FIELD_MANAGER, deleteObject, kubernetesCall, kubernetesError } from './kubernetes.ts';
import type { Manifest } from './kubernetes-manifests.ts';
import {
  BUILD_CONTAINER,
  BUILD_LABEL,
  PUSH_CONTAINER,
  SOURCE_DELIVERED,
  buildJobManifest,
  buildJobName,
  buildNamespaceManifest,
  buildNetworkPolicyManifest,
  buildWorkspace,
  type BuildJobOptions,
} from './kubernetes-build-manifests.ts';

export interface KubernetesBuilderOptions {
  guard: UrlGuard;
  allowHttp: boolean;
  workDir: string;
  logger: Logger;
  /** Where images are pushed: `<registry>/<service id>:<build id>`. */
  registry: string;
  namespace: string;
  buildkitImage: string;
  /** The image of the push container (pier/image-push). */
  pushImage: string;
  pushSecret?: string;
  /** A ConfigMap in the namespace with the registry's CA (`ca.crt`). */
  registryCa?: string;
  /** Capabilities added to the build container's bounding set. */
  buildCapabilities?: string[];
  timeoutSeconds: number;
  memoryMiB?: number;
  /** How often a running Job is looked at. */
  pollMs?: number;
  /** How long a build pod may take to start. */
  startTimeoutMs?: number;
}

/** The client's model name for a manifest: `batch/v1` Job -> `V1Job`. */
function typed(m: Manifest): KubernetesObject {
  const version = m.apiVersion.split('/').pop()!;
  return ObjectSerializer.deserialize(m, `${version.charAt(0).toUpperCase()}${version.slice(1)}${m.kind}`) as KubernetesObject;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

function containerStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((c) => c.name === name);
}

/**
 * What the pod's containers say of the build: the digest the push reported, or why it failed;
 * nothing while they run.
 */
function outcomeOf(pod: V1Pod): { digest: string } | { error: string } | undefined {
  const built = containerStatus(pod, BUILD_CONTAINER)?.state?.terminated;
  if (built && built.exitCode !== 0) {
    const why = built.reason === 'OOMKilled' ? ', out of memory' : '';
    return { error: `the build failed (exit code ${built.exitCode}${why}); see the log` };
  }
  const pushed = containerStatus(pod, PUSH_CONTAINER)?.state?.terminated;
  const message = pushed?.message?.trim() ?? '';
  if (pushed?.exitCode === 0) {
    return DIGEST.test(message) ? { digest: message } : { error: `the push reported no image digest${message ? ` (${message.slice(0, 200)})` : ''}` };
  }
  if (pushed) return { error: `the image could not be pushed to the registry: ${message || `exit code ${pushed.exitCode}`}` };
  return undefined;
}

export class KubernetesBuilder implements BuilderPort {
  readonly kind = 'kubernetes' as const;
  readonly survivesRestart = true;
  private readonly objects: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  private readonly exec: Exec;
  private namespaceReady = false;

  constructor(
    kc: KubeConfig,
    private readonly opts: KubernetesBuilderOptions,
  ) {
    const configuration = kubernetesApiConfiguration(kc, 15_000);
    this.objects = new KubernetesObjectApi(configuration);
    this.core = new CoreV1Api(configuration);
    this.exec = new Exec(kc);
  }

  private get jobOptions(): BuildJobOptions {
    const o = this.opts;
    return {
      namespace: o.namespace,
      buildkitImage: o.buildkitImage,
      pushImage: o.pushImage,
      pushSecret: o.pushSecret,
      registryCa: o.registryCa,
      buildCapabilities: o.buildCapabilities,
      timeoutSeconds: o.timeoutSeconds,
      memoryMiB: o.memoryMiB ?? 2048,
    };
  }

  /** The tag a build pushes; run() answers it with the pushed digest appended. */
  imageFor(t: BuildTarget): string {
    return `${this.opts.registry.replace(/\/+$/, '')}/${t.serviceId}:${t.buildId}`;
  }

  private apply(m: Manifest): Promise<unknown> {
    return kubernetesCall(`apply ${m.kind}/${m.metadata.name}`, () =>
      this.objects.patch(typed(m), undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply),
    );
  }

  async run(req: BuildRequest, io: BuildIo): Promise<string> {
    await mkdir(this.opts.workDir, { recursive: true });
    const scratch = await mkdtemp(path.join(this.opts.workDir, `k8s-${req.buildId}-`));
    try {
      const sourceRoot = req.source.kind === 'upload' ? req.source.dir : path.join(scratch, 'src');
      if (req.source.kind === 'git')
        io.fetched(await fetchRepository(this.opts.guard, this.opts.allowHttp, req.source.repoUrl, req.source.ref, sourceRoot, io));
      const context = await packContext(sourceRoot, req.contextDir, req.dockerfilePath);
      const tarFile = path.join(scratch, 'context.tar');
      await pipeline(context.tar, createWriteStream(tarFile));
      if (!this.namespaceReady) {
        await this.apply(buildNamespaceManifest(this.opts.namespace));
        await this.apply(buildNetworkPolicyManifest(this.opts.namespace));
        this.namespaceReady = true;
      }
      const job = buildJobManifest(req, req.image, context.dockerfile, this.jobOptions);
      await kubernetesCall('create Job', () => this.objects.create(typed(job))).catch((err: Error) => {
        // A retry of a create that reached the cluster: the Job is there already.
        if (!/already exists/i.test(err.message)) throw err;
      });
      io.log(`[pier] build Job ${this.opts.namespace}/${job.metadata.name} created; sending the source\n`);
      const pod = await this.runningPod(req, io.signal);
      await this.deliver(req, pod, tarFile, (await stat(tarFile)).size);
      await this.apply({ ...job, metadata: { ...job.metadata, annotations: { [SOURCE_DELIVERED]: 'true' } } });
      return await this.follow(req, io);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  async reattach(req: BuildRequest, io: BuildIo): Promise<string | false> {
    const job = await this.readJob(req);
    if (!job?.metadata?.annotations?.[SOURCE_DELIVERED]) return false;
    io.log('\n[pier] compute restarted: following the build Job again (its log from the start)\n');
    return this.follow(req, io);
  }

  async hasImage(t: BuildTarget): Promise<boolean> {
    return ((await this.readJob(t))?.status?.succeeded ?? 0) > 0;
  }

  async discard(t: BuildTarget): Promise<void> {
    await deleteObject(this.objects, this.opts.namespace, { apiVersion: 'batch/v1', kind: 'Job', name: buildJobName(t.buildId) });
  }

  private async readJob(t: BuildTarget): Promise<V1Job | undefined> {
    try {
      return (await this.objects.read<V1Job>({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: buildJobName(t.buildId), namespace: this.opts.namespace },
      })) as V1Job;
    } catch (err) {
      if (isKubernetesNotFound(err)) return undefined;
      throw kubernetesError(err, 'read Job');
    }
  }

  private async pod(t: BuildTarget): Promise<V1Pod | undefined> {
    const pods = await kubernetesCall('list pods', () =>
      this.core.listNamespacedPod({ namespace: this.opts.namespace, labelSelector: `${BUILD_LABEL}=${t.buildId}` }),
    );
    return pods.items.find((p) => !p.metadata?.deletionTimestamp);
  }

  /** The build pod once its build container runs (it waits for the source; the pod is still Pending then). */
  private async runningPod(t: BuildTarget, signal: AbortSignal): Promise<string> {
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 300_000);
    let last = 'not created yet';
    while (Date.now() < deadline) {
      if (signal.aborted) throw signal.reason;
      const pod = await this.pod(t);
      const build = pod && containerStatus(pod, BUILD_CONTAINER);
      if (build?.state?.running) return pod!.metadata!.name!;
      if (build?.state?.terminated || pod?.status?.phase === 'Failed' || pod?.status?.phase === 'Succeeded')
        throw new BuildFailedError(`the build pod ended before it got its source (${pod?.status?.phase ?? 'gone'})`);
      const waiting = build?.state?.waiting;
      last = waiting?.reason ? `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}` : (pod?.status?.phase ?? last);
      await sleep(1000, undefined, { signal }).catch(() => undefined);
    }
    throw new BuildFailedError(`the build pod did not start in time (${last})`);
  }

  /** Streams the context tar into the waiting build container, which unpacks it and starts building. */
  private async deliver(t: BuildTarget, pod: string, tarFile: string, size: number): Promise<void> {
    const workspace = buildWorkspace(t.buildId);
    // `head -c` ends the input at the tar's size: no need for stdin's EOF, which the v4 protocol cannot send.
    const command = [
      'sh',
      '-c',
      'mkdir -p "$2/context" && head -c "$1" | tar -x -f - -C "$2/context" && touch "$2/.pier-ready"',
      'sh',
      String(size),
      workspace,
    ];
    const errors = new PassThrough();
    let stderr = '';
    errors.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-1000)));
    const status = await new Promise<V1Status | undefined>((resolve, reject) => {
      let settled: V1Status | undefined;
      this.exec
        .exec(this.opts.namespace, pod, BUILD_CONTAINER, command, new PassThrough().resume(), errors, createReadStream(tarFile), false, (s) => {
          settled = s;
          resolve(s);
        })
        .then((ws) => ws.on('close', () => resolve(settled)))
        .catch((err: unknown) => reject(kubernetesError(err, 'exec (send the source)')));
    });
    if (status?.status !== 'Success') {
      throw new BuildFailedError(
        `the source could not be unpacked in the build pod: ${status?.message ?? 'the exec ended without a status'}${stderr ? ` (${stderr.trim()})` : ''}`,
      );
    }
  }

  /**
   * Follows the Job to its end, passing on the build container's log as it grows; answers the
   * pushed image by digest, read from the push container's termination message.
   */
  private async follow(t: BuildTarget & { image: string }, io: BuildIo): Promise<string> {
    let shown = 0;
    for (;;) {
      if (io.signal.aborted) throw io.signal.reason;
      const job = await this.readJob(t);
      if (!job) throw new BuildFailedError('the build Job was deleted outside Pier');
      const pod = await this.pod(t);
      if (pod) {
        const text = await this.core
          .readNamespacedPodLog({ name: pod.metadata!.name!, namespace: this.opts.namespace, container: BUILD_CONTAINER })
          .catch(() => '');
        if (text.length > shown) {
          io.log(text.slice(shown));
          shown = text.length;
        }
      }
      const failed = job.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
      if (failed?.reason === 'DeadlineExceeded') throw new BuildFailedError('the build Job ran past its deadline');
      // The pod was read before its log: a container it shows ended has printed all it will.
      const outcome = pod && outcomeOf(pod);
      if (outcome && 'error' in outcome) throw new BuildFailedError(outcome.error);
      if (outcome) {
        const image = `${t.image}@${outcome.digest}`;
        io.log(`[pier] pushed ${image}\n`);
        return image;
      }
      if ((job.status?.succeeded ?? 0) > 0) throw new BuildFailedError('the build Job succeeded but its pod, which holds the pushed digest, is gone');
      if (failed || (job.status?.failed ?? 0) > 0) {
        throw new BuildFailedError(`the build failed${failed?.message ? `: ${failed.message}` : ''} (see the log)`);
      }
      await sleep(this.opts.pollMs ?? 2000, undefined, { signal: io.signal }).catch(() => undefined);
    }
  }
}
