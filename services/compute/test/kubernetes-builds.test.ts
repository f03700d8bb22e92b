// Builds on the kubernetes adapter, against the in-process fake of the Kubernetes API: every
// object validated against the Kubernetes schemas (kubernetes-models), the source streamed
// into the build pod over the real exec channel protocol (the fake runs the command locally,
// so the unpacked context can be looked at), the Job followed to its end through its status
// and its pod's log, cancel and reattach; then compute itself on the fake, building from the
// real git server and deploying the pushed image by the digest its push container reported.
// The push step itself runs for real against a registry in kubernetes-build-push.test.ts.
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, UrlGuard, vpcNamespace } from '@pier/kit';
import { FakeKubernetes, startGitServer, validateManifest, type GitServer } from '@pier/testing';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { KubernetesBuilder } from '../src/cluster/kubernetes-builds.ts';
import {
  SOURCE_DELIVERED,
  buildJobManifest,
  buildJobName,
  buildNamespaceManifest,
  buildNetworkPolicyManifest,
  buildWorkspace,
} from '../src/cluster/kubernetes-build-manifests.ts';
import { BuildFailedError, type BuildIo, type BuildRequest } from '../src/domain/builds/builder-port.ts';
import { startCompute, until, type Compute } from './support.ts';
import { buildEnv, site, waitForBuild } from './build-support.ts';

const NS = 'pier-builds-test';
const REGISTRY = 'registry.example.test/pier';
const BUILDKIT = 'moby/buildkit:v0.17.3-rootless';
const PUSH_IMAGE = 'pier/image-push:1';
let fake: FakeKubernetes;
let kubeconfig: string;
let git: GitServer;
let work: string;
const workspaces: string[] = [];

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
  git = await startGitServer();
  await git.createRepo('site');
  await git.commit('site', site('built on kubernetes'), 'first');
  work = await mkdtemp(path.join(os.tmpdir(), 'pier-k8s-builds-'));
}, 60_000);

afterAll(async () => {
  await fake?.stop();
  await git?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
  for (const w of workspaces) await rm(w, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
}, 60_000);

function builder(): KubernetesBuilder {
  return new KubernetesBuilder(kubeConfigFrom(kubeconfig), {
    guard: new UrlGuard({ allowHttp: true, allowedHosts: [git.ip] }),
    allowHttp: true,
    workDir: path.join(work, 'fetched'),
    logger: createLogger('test', 'warn'),
    registry: REGISTRY,
    namespace: NS,
    buildkitImage: BUILDKIT,
    pushImage: PUSH_IMAGE,
    pushSecret: 'registry-push',
    timeoutSeconds: 600,
    pollMs: 100,
    startTimeoutMs: 10_000,
  });
}

/** A request for a new build of an uploaded source in `dir`. */
function request(b: KubernetesBuilder, source: BuildRequest['source']): BuildRequest {
  const t = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() };
  workspaces.push(buildWorkspace(t.buildId));
  return { ...t, source, contextDir: 'app', dockerfilePath: 'app/Dockerfile', image: b.imageFor(t) };
}

function io(signal = new AbortController().signal): BuildIo & { text: () => string; commit?: string } {
  let text = '';
  const out = {
    signal,
    log: (t: string) => void (text += t),
    fetched: (sha: string) => void (out.commit = sha),
    text: () => text,
    commit: undefined as string | undefined,
  };
  return out;
}

async function uploadedSource(): Promise<string> {
  const dir = await mkdtemp(path.join(work, 'upload-'));
  await mkdir(path.join(dir, 'app'), { recursive: true });
  await writeFile(path.join(dir, 'app', 'Dockerfile'), 'FROM pier/tiny-http:1\nCOPY index.html /www/\n');
  await writeFile(path.join(dir, 'app', 'index.html'), 'from kubernetes\n');
  await writeFile(path.join(dir, 'app', '.dockerignore'), 'secret.txt\n');
  await writeFile(path.join(dir, 'app', 'secret.txt'), 'never in the context\n');
  return dir;
}

const job = (id: string) => fake.get('batch/v1', 'Job', NS, buildJobName(id));
const podOf = (id: string) => fake.list('Pod', NS).find((p) => p.metadata.labels['pier.dev/build'] === id);

/** Until compute has delivered build `id`'s source into its pod. */
const delivered = (id: string) =>
  until(
    async () => job(id)?.metadata.annotations?.[SOURCE_DELIVERED],
    (v) => v === 'true',
    15_000,
  );

/** A digest as skopeo's --digestfile has it. */
const digestOf = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** Ends a build Job as its pod would once the push container reported `digest`. */
const pushed = (id: string, digest: string) => fake.finishJob(NS, buildJobName(id), 'succeeded', undefined, { push: { exitCode: 0, message: digest } });

describe('the build manifests', () => {
  it('are objects the API server accepts: the namespace, its egress policy, and the Job with and without push credentials', () => {
    const t = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() };
    const options = { namespace: NS, buildkitImage: BUILDKIT, pushImage: PUSH_IMAGE, timeoutSeconds: 1800, memoryMiB: 2048 };
    for (const m of [
      buildNamespaceManifest(NS),
      buildNetworkPolicyManifest(NS),
      buildJobManifest(t, `${REGISTRY}/${t.serviceId}:${t.buildId}`, 'Dockerfile', options),
      buildJobManifest(t, `${REGISTRY}/${t.serviceId}:${t.buildId}`, 'docker/web.Dockerfile', { ...options, pushSecret: 'registry-push' }),
      buildJobManifest(t, `${REGISTRY}/${t.serviceId}:${t.buildId}`, 'Dockerfile', { ...options, registryCa: 'registry-ca', buildCapabilities: ['SYS_ADMIN'] }),
    ]) {
      expect(() => validateManifest(m), `${m.kind} ${m.metadata.name}`).not.toThrow();
    }
    const manifest = buildJobManifest(t, 'r/x:y', 'Dockerfile', options) as any;
    expect(manifest.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 1800 });
    expect(manifest.spec.template.spec).toMatchObject({ restartPolicy: 'Never', automountServiceAccountToken: false, securityContext: { runAsNonRoot: true } });
    const policy = buildNetworkPolicyManifest(NS) as any;
    expect(policy.spec.egress[0].to[0].ipBlock.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10']));
  });

  it('keeps the push credentials out of the container that runs the Dockerfile: only the push container mounts them', () => {
    const t = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() };
    const options = { namespace: NS, buildkitImage: BUILDKIT, pushImage: PUSH_IMAGE, pushSecret: 'registry-push', timeoutSeconds: 1800, memoryMiB: 2048 };
    const spec = (buildJobManifest(t, `${REGISTRY}/${t.serviceId}:${t.buildId}`, 'Dockerfile', options) as any).spec.template.spec;
    const containers: any[] = [...(spec.initContainers ?? []), ...spec.containers];
    const secretVolumes = spec.volumes.filter((v: any) => v.secret || v.projected).map((v: any) => v.name);
    const mounting = containers.filter((c) => c.volumeMounts?.some((m: any) => secretVolumes.includes(m.name))).map((c) => c.image);
    expect(mounting).toEqual([PUSH_IMAGE]);
    // The tenant's RUN steps share the BuildKit container's files and processes: nothing
    // there may lead to the credentials, nor even name the repository the image goes to.
    const tenant = containers.filter((c) => c.image === BUILDKIT);
    expect(tenant).toHaveLength(1);
    expect(tenant[0].env.map((e: any) => e.name)).not.toContain('DOCKER_CONFIG');
    expect(tenant[0].env.filter((e: any) => e.valueFrom || e.value.includes(REGISTRY))).toEqual([]);
    expect(tenant[0].envFrom).toBeUndefined();
    expect(spec.shareProcessNamespace).toBeUndefined();
    expect(spec.serviceAccountName).toBeUndefined();
  });

  it("trusts a private registry's CA in both steps, and adds capabilities to the BuildKit container alone", () => {
    const t = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() };
    const options = { namespace: NS, buildkitImage: BUILDKIT, pushImage: PUSH_IMAGE, timeoutSeconds: 1800, memoryMiB: 2048 };
    const plain = (buildJobManifest(t, 'registry.internal:5000/pier/x:y', 'Dockerfile', options) as any).spec.template.spec;
    expect(plain.initContainers[0].securityContext.capabilities).toBeUndefined();
    expect(plain.volumes.map((v: any) => v.name)).not.toContain('registry-ca');
    const spec = (
      buildJobManifest(t, 'registry.internal:5000/pier/x:y', 'Dockerfile', {
        ...options,
        registryCa: 'pier-registry-ca',
        buildCapabilities: ['SYS_ADMIN'],
      }) as any
    ).spec.template.spec;
    expect(spec.volumes).toContainEqual({ name: 'registry-ca', configMap: { name: 'pier-registry-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } });
    const [build] = spec.initContainers;
    const [push] = spec.containers;
    expect(build.securityContext.capabilities).toEqual({ add: ['SYS_ADMIN'] });
    expect(push.securityContext.capabilities).toEqual({ drop: ['ALL'] });
    // BuildKit trusts it for base images from that registry (its host, not where the image goes).
    expect(build.env).toEqual(
      expect.arrayContaining([
        { name: 'REGISTRY_HOST', value: 'registry.internal:5000' },
        { name: 'REGISTRY_CA', value: '/pier/registry-ca/ca.crt' },
      ]),
    );
    expect(build.command[2]).toContain('buildkitd.toml');
    // skopeo, through --dest-cert-dir.
    expect(push.env).toContainEqual({ name: 'CERT_DIR', value: '/pier/registry-ca' });
    for (const c of [build, push]) expect(c.volumeMounts).toContainEqual({ name: 'registry-ca', mountPath: '/pier/registry-ca', readOnly: true });
  });
});

describe('the kubernetes builder', () => {
  it('runs a Job, streams the source into its pod, follows its log and ends when the Job completes', async () => {
    const b = builder();
    const req = request(b, { kind: 'upload', dir: await uploadedSource() });
    const out = io();
    const running = b.run(req, out);
    // The source arrives in the pod's workspace, unpacked, and the build is told to go.
    const workspace = buildWorkspace(req.buildId);
    await until(
      () =>
        stat(path.join(workspace, '.pier-ready')).then(
          () => true,
          () => false,
        ),
      (ready) => ready,
      15_000,
    );
    expect(await readFile(path.join(workspace, 'context', 'index.html'), 'utf8')).toBe('from kubernetes\n');
    await expect(stat(path.join(workspace, 'context', 'secret.txt'))).rejects.toThrow();
    const session = fake.exec.sessions.find((s) => s.pod === podOf(req.buildId)?.metadata.name)!;
    expect(session).toMatchObject({ namespace: NS, container: 'build', tty: false });
    expect(job(req.buildId)!.metadata.annotations).toMatchObject({ [SOURCE_DELIVERED]: 'true' });

    // The pod is Pending while its build (init) container runs: that is where the source went.
    expect(podOf(req.buildId)!.status.phase).toBe('Pending');

    fake.podLogs.write(NS, podOf(req.buildId)!.metadata.name, '#1 [internal] load build definition from Dockerfile', '#6 exporting to oci image format done');
    await until(
      async () => out.text(),
      (t) => t.includes('exporting to oci image format done'),
      10_000,
    );
    const digest = digestOf(req.buildId);
    pushed(req.buildId, digest);
    // Deployed by digest, behind the build's own tag: exactly what this push stored.
    expect(await running).toBe(`${REGISTRY}/${req.serviceId}:${req.buildId}@${digest}`);
    expect(out.text()).toContain('#1 [internal] load build definition');
    expect(out.text()).toContain(`[pier] pushed ${req.image}@${digest}`);
    expect(await b.hasImage(req)).toBe(true);
    expect(req.image).toBe(`${REGISTRY}/${req.serviceId}:${req.buildId}`);
    expect(fake.invalid).toEqual([]);
    const spec = job(req.buildId)!.spec.template.spec;
    expect(spec.initContainers.map((c: any) => c.name)).toEqual(['build']);
    expect(spec.containers.map((c: any) => c.name)).toEqual(['push']);
    expect(spec.initContainers[0].env).toEqual(expect.arrayContaining([{ name: 'DOCKERFILE', value: 'Dockerfile' }]));
    expect(spec.containers[0]).toMatchObject({ image: PUSH_IMAGE, terminationMessagePath: '/dev/termination-log' });
    expect(spec.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'IMAGE', value: req.image },
        { name: 'AUTHFILE', value: '/pier/push-credentials/config.json' },
      ]),
    );
    expect(spec.containers[0].volumeMounts).toEqual(
      expect.arrayContaining([{ name: 'push-credentials', mountPath: '/pier/push-credentials', readOnly: true }]),
    );
    expect(spec.volumes).toEqual(
      expect.arrayContaining([
        { name: 'push-credentials', secret: { secretName: 'registry-push', items: [{ key: '.dockerconfigjson', path: 'config.json' }] } },
      ]),
    );
  });

  it('fails with the push when the registry refuses it, and with the build container when it fails', async () => {
    const b = builder();
    const refused = request(b, { kind: 'upload', dir: await uploadedSource() });
    const running = b.run(refused, io());
    await delivered(refused.buildId);
    const denied = 'writing manifest: unauthorized: authentication required';
    fake.finishJob(NS, buildJobName(refused.buildId), 'failed', undefined, { build: { exitCode: 0 }, push: { exitCode: 1, message: denied } });
    await expect(running).rejects.toThrow(new BuildFailedError(`the image could not be pushed to the registry: ${denied}`));
    expect(await b.hasImage(refused)).toBe(false);

    const broken = request(b, { kind: 'upload', dir: await uploadedSource() });
    const failing = b.run(broken, io());
    await delivered(broken.buildId);
    fake.finishJob(NS, buildJobName(broken.buildId), 'failed', undefined, { build: { exitCode: 137, reason: 'OOMKilled' } });
    await expect(failing).rejects.toThrow(new BuildFailedError('the build failed (exit code 137, out of memory); see the log'));

    // A push container that ended well but reported no digest (it cannot be trusted) fails too.
    const silent = request(b, { kind: 'upload', dir: await uploadedSource() });
    const quiet = b.run(silent, io());
    await delivered(silent.buildId);
    pushed(silent.buildId, 'pushed somewhere');
    await expect(quiet).rejects.toThrow(new BuildFailedError('the push reported no image digest (pushed somewhere)'));
  });

  it('fetches a git source in compute and fails with the Job', async () => {
    const b = builder();
    const req = { ...request(b, { kind: 'git', repoUrl: git.url('site'), ref: null }), contextDir: '.', dockerfilePath: 'Dockerfile' };
    const out = io();
    const running = b.run(req, out);
    await delivered(req.buildId);
    expect(await readFile(path.join(buildWorkspace(req.buildId), 'context', 'index.html'), 'utf8')).toContain('built on kubernetes');
    expect(out.commit).toMatch(/^[0-9a-f]{40}$/);
    fake.finishJob(NS, buildJobName(req.buildId), 'failed');
    await expect(running).rejects.toThrow(BuildFailedError);
    await b.discard(req);
    expect(job(req.buildId)).toBeUndefined();
    expect(podOf(req.buildId)).toBeUndefined();
  });

  it('stops at once when aborted, and discard removes the Job and its pod', async () => {
    const b = builder();
    const req = request(b, { kind: 'upload', dir: await uploadedSource() });
    const controller = new AbortController();
    const running = b.run(req, io(controller.signal));
    await delivered(req.buildId);
    controller.abort(new Error('cancelled by the test'));
    await expect(running).rejects.toThrow('cancelled by the test');
    await b.discard(req);
    expect(job(req.buildId)).toBeUndefined();
    expect(podOf(req.buildId)).toBeUndefined();
  });

  it('follows a Job again after a restart once its source was delivered, and cannot otherwise', async () => {
    const first = builder();
    const req = request(first, { kind: 'upload', dir: await uploadedSource() });
    const controller = new AbortController();
    const running = first.run(req, io(controller.signal));
    await delivered(req.buildId);
    // The process goes away; the Job goes on.
    controller.abort(new Error('shutdown'));
    await running.catch(() => undefined);
    fake.podLogs.write(NS, podOf(req.buildId)!.metadata.name, 'built while compute was away');

    const second = builder();
    const out = io();
    const followed = second.reattach(req, out);
    await until(
      async () => out.text(),
      (t) => t.includes('built while compute was away'),
      10_000,
    );
    const digest = digestOf(`again ${req.buildId}`);
    pushed(req.buildId, digest);
    expect(await followed).toBe(`${req.image}@${digest}`);
    // The digest stays on the finished pod: a later restart reads it again.
    expect(await builder().reattach(req, io())).toBe(`${req.image}@${digest}`);
    expect(await second.reattach({ ...req, buildId: randomUUID() }, io())).toBe(false);
  });
});

describe('compute building on kubernetes', () => {
  let c: Compute;
  let cleanup: () => Promise<void>;

  afterAll(async () => {
    await c?.stop();
    await cleanup?.();
  });

  it('answers 503 without a registry to push to', async () => {
    const setup = await buildEnv(git);
    const bare = await startCompute({ ...setup.env, PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig });
    try {
      const svc = (await bare.post(bare.base, { name: 'no-registry', port: 8080 })).body;
      const res = await bare.post(`${bare.base}/${svc.id}/builds/git`, { repo_url: git.url('site') });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ code: 'builds_unavailable', error: expect.stringMatching(/PIER_BUILD_REGISTRY/) });
    } finally {
      await bare.stop();
      await setup.cleanup();
    }
  });

  it('builds from git in a Job and deploys the pushed image by its digest', async () => {
    const setup = await buildEnv(git, { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_BUILD_REGISTRY: REGISTRY, PIER_BUILD_NAMESPACE: NS });
    cleanup = setup.cleanup;
    c = await startCompute(setup.env);
    const svc = (await c.post(c.base, { name: 'k8s-built', port: 8080 })).body;
    const queued = await c.post(`${c.base}/${svc.id}/builds/git`, { repo_url: git.url('site') });
    expect(queued.status).toBe(202);
    workspaces.push(buildWorkspace(queued.body.id));
    await until(
      async () => job(queued.body.id)?.metadata.annotations?.[SOURCE_DELIVERED],
      (v) => v === 'true',
      30_000,
    );
    const digest = digestOf(queued.body.id);
    pushed(queued.body.id, digest);
    const b = await waitForBuild(c, svc.id, queued.body.id, undefined, 30_000);
    expect(b).toMatchObject({ status: 'succeeded', image: `${REGISTRY}/${svc.id}:${queued.body.id}@${digest}` });
    const deployment = fake.get('apps/v1', 'Deployment', vpcNamespace(c.vpcId), 'k8s-built')!;
    expect(deployment.spec.template.spec.containers[0].image).toBe(b.image);
    expect(fake.invalid).toEqual([]);
  });
});
