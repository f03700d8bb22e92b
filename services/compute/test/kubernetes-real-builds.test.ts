// A build Job on a REAL node (deploy/kube/cluster.sh, started by ./pier test): the kubelet
// runs the Job's `build` init container, compute streams the source into it through the exec
// subresource while the pod is still Pending (an init container is a container the API
// server execs into), follows its log, and reads the end of the pod from the container
// statuses. The build container here is pier/tiny-http's busybox, so once the source is in,
// BuildKit's command is not found — a build failure, which must end the build as one, with
// the push container never started. Then the push container on the real kubelet: a Job as compute makes it but
// whose build step only exits 0 (it leaves no archive), followed again as after a restart —
// the push script's refusal reaches compute as the container's termination message, from a
// read-only root. Whole builds (pier/buildkit, the cluster's registry, the deployment) run in
// kubernetes-real-build-deploy.test.ts.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, UrlGuard } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesBuilder } from '../src/cluster/kubernetes-builds.ts';
import { SOURCE_DELIVERED, buildJobManifest, buildJobName, buildNamespaceManifest } from '../src/cluster/kubernetes-build-manifests.ts';
import { BuildFailedError } from '../src/domain/builds/builder-port.ts';
import { TINY_HTTP } from './support.ts';

const NS = `pier-builds-real-${randomUUID().slice(0, 8)}`;
let k: RealKubernetes;
let work: string;

function builderIn(dir: string): KubernetesBuilder {
  return new KubernetesBuilder(kubeConfigFrom(k.kubeconfig), {
    guard: new UrlGuard({ allowHttp: false }),
    allowHttp: false,
    workDir: path.join(dir, 'fetched'),
    logger: createLogger('test', 'warn'),
    registry: 'registry.invalid/pier',
    namespace: NS,
    buildkitImage: TINY_HTTP,
    pushImage: 'pier/image-push:1',
    timeoutSeconds: 300,
    memoryMiB: 256,
    pollMs: 500,
    startTimeoutMs: 120_000,
  });
}

const target = () => ({ buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() });

function io(): { signal: AbortSignal; log: (text: string) => void; fetched: () => void; text: () => string } {
  let text = '';
  return { signal: new AbortController().signal, log: (t: string) => void (text += t), fetched: () => undefined, text: () => text };
}

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  work = await mkdtemp(path.join(os.tmpdir(), 'pier-real-builds-'));
}, 60_000);

afterAll(async () => {
  if (k) await k.deleteNamespace(NS);
  if (work) await rm(work, { recursive: true, force: true });
});

describe('a build Job on a real node', () => {
  it('gets its source into the running build init container, and ends failed when that container fails', async () => {
    const source = path.join(work, 'source');
    await mkdir(source, { recursive: true });
    await writeFile(path.join(source, 'Dockerfile'), 'FROM pier/tiny-http:1\n');
    const builder = builderIn(work);
    const t = target();
    const req = { ...t, source: { kind: 'upload' as const, dir: source }, contextDir: '.', dockerfilePath: 'Dockerfile', image: builder.imageFor(t) };
    const out = io();

    const ended = await builder.run(req, out).then(
      () => new Error('the build succeeded'),
      (err: unknown) => err,
    );
    expect(ended).toBeInstanceOf(BuildFailedError);
    // 127: the shell's "not found" for BuildKit's command, run only after the source arrived.
    expect((ended as Error).message).toBe('the build failed (exit code 127); see the log');
    expect(out.text()).toMatch(/buildctl-daemonless\.sh: not found/);
    const job = await k.get(`/apis/batch/v1/namespaces/${NS}/jobs/${buildJobName(t.buildId)}`);
    expect(job.metadata.annotations?.[SOURCE_DELIVERED]).toBe('true');
    const [pod] = await k.list(`/api/v1/namespaces/${NS}/pods`, `pier.dev/build=${t.buildId}`);
    expect(pod!.status.initContainerStatuses[0]).toMatchObject({ name: 'build', state: { terminated: { exitCode: 127 } } });
    // The credentials' container never started.
    expect(pod!.status.containerStatuses[0].name).toBe('push');
    expect(pod!.status.containerStatuses[0].state.terminated).toBeUndefined();

    await builder.discard(t);
  }, 240_000);

  it("reads the push container's termination message: its refusal of a missing archive ends the build", async () => {
    const builder = builderIn(work);
    const t = target();
    const job = buildJobManifest(t, builder.imageFor(t), 'Dockerfile', {
      namespace: NS,
      buildkitImage: TINY_HTTP,
      pushImage: 'pier/image-push:1',
      pushSecret: undefined,
      timeoutSeconds: 300,
      memoryMiB: 256,
    }) as any;
    // The one change: a build step that ends at once, leaving nothing (no BuildKit here).
    job.spec.template.spec.initContainers[0].command = ['true'];
    job.metadata.annotations = { [SOURCE_DELIVERED]: 'true' };
    const ns = await k.request('POST', '/api/v1/namespaces', buildNamespaceManifest(NS));
    expect([201, 409]).toContain(ns.status);
    const created = await k.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, job);
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    const out = io();
    const req = { ...t, source: { kind: 'upload' as const, dir: work }, contextDir: '.', dockerfilePath: 'Dockerfile', image: builder.imageFor(t) };
    await expect(builder.reattach(req, out)).rejects.toThrow(
      new BuildFailedError('the image could not be pushed to the registry: the build left no image archive'),
    );
    const [pod] = await k.list(`/api/v1/namespaces/${NS}/pods`, `pier.dev/build=${t.buildId}`);
    expect(pod!.status.containerStatuses[0]).toMatchObject({
      name: 'push',
      state: { terminated: { exitCode: 1, message: 'the build left no image archive\n' } },
    });
    await builder.discard(t);
  }, 240_000);
});
