// The push step of a Kubernetes build, for real, on the Docker engine: the push container of
// the build Job (pier/image-push: Debian's skopeo), with the Job's exact command and env,
// pushes an OCI archive to a real registry (pier/registry-test: Debian's docker-registry over
// HTTPS with htpasswd). Kubernetes' part is played by volumes: the `image` volume the build
// container would have written (filled here by skopeo from pier/tiny-http, read-only for the
// push as in the pod), the credentials Secret and the registry's CA (read-only volumes), /tmp
// (a volume on a read-only root, as the pod's emptyDir). The only env that differs is RESULT:
// Docker keeps no termination message, so it points into the /tmp volume, read afterwards.
// Whole Jobs, with BuildKit and the cluster's registry, run in kubernetes-real-build-deploy.test.ts;
// this one keeps the credentials (the cluster's registry is anonymous).
import { createHash, randomUUID } from 'node:crypto';
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import tar from 'tar-stream';
import type Docker from 'dockerode';
import { docker, testLabels } from '@pier/testing';
import { buildJobManifest, PUSH_CONTAINER } from '../src/cluster/kubernetes-build-manifests.ts';

const PUSH_IMAGE = 'pier/image-push:1';
const REGISTRY_IMAGE = 'pier/registry-test:1';
const USER = 'pier-push';
const PASSWORD = randomUUID();
const MANIFEST_TYPES = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];

let registry: Docker.Container;
let registryHost: string;
let ca: string;
const containers: Docker.Container[] = [];
const volumes: string[] = [];

async function readStream(s: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks);
}

/** Files and symlinks as a tar (what putArchive takes). */
async function tarOf(entries: { name: string; content?: Buffer | string; link?: string }[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    if (e.link) pack.entry({ name: e.name, type: 'symlink', linkname: e.link });
    else pack.entry({ name: e.name, mode: 0o644 }, e.content!);
  }
  pack.finalize();
  return readStream(pack as unknown as AsyncIterable<unknown>);
}

/** One file's content out of a container (stopped ones too), through the archive endpoint. */
async function readFileOf(c: Docker.Container, file: string): Promise<string> {
  const archive = await c.getArchive({ path: file });
  const extract = tar.extract();
  let content = '';
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (_h, stream, next) => {
      readStream(stream as unknown as AsyncIterable<unknown>).then((b) => {
        content += b.toString();
        next();
      }, reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  archive.pipe(extract as unknown as NodeJS.WritableStream);
  await done;
  return content;
}

async function volume(): Promise<string> {
  const name = `pier-test-push-${randomUUID().slice(0, 8)}`;
  await docker.createVolume({ Name: name, Labels: testLabels() });
  volumes.push(name);
  return name;
}

/** Runs a container to its end: its exit code and output. */
async function runToEnd(
  options: Docker.ContainerCreateOptions,
  files: { path: string; tar: Buffer }[] = [],
): Promise<{ code: number; output: string; container: Docker.Container }> {
  const c = await docker.createContainer({ ...options, Labels: testLabels() });
  containers.push(c);
  for (const f of files) await c.putArchive(f.tar, { path: f.path });
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  const logs = (await c.logs({ stdout: true, stderr: true })) as unknown as Buffer;
  // The multiplexed stream's 8-byte frame headers, dropped.
  let output = '';
  for (let i = 0; i + 8 <= logs.length;) {
    const size = logs.readUInt32BE(i + 4);
    output += logs.subarray(i + 8, i + 8 + size).toString();
    i += 8 + size;
  }
  return { code: StatusCode, output, container: c };
}

/** GET on the registry, as a client trusting its certificate. */
function registryGet(path: string, auth = true): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const [host, port] = registryHost.split(':');
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host,
        port: Number(port),
        path,
        ca,
        headers: { Accept: MANIFEST_TYPES.join(', '), ...(auth ? { Authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` } : {}) },
      },
      (res) => readStream(res).then((body) => resolve({ status: res.statusCode!, headers: res.headers, body }), reject),
    );
    req.on('error', reject);
    req.end();
  });
}

/** A volume holding an OCI archive of pier/tiny-http, made by skopeo as BuildKit's oci exporter would leave it. */
async function imageVolume(): Promise<string> {
  const name = await volume();
  const saved = await readStream(await docker.getImage('pier/tiny-http:1').get());
  const made = await runToEnd(
    {
      Image: PUSH_IMAGE,
      User: '0',
      Entrypoint: ['sh', '-c', 'skopeo copy docker-archive:/tmp/tiny.tar oci-archive:/pier/image/image.tar && chmod 644 /pier/image/image.tar'],
      HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/pier/image' }] },
    },
    [{ path: '/tmp', tar: await tarOf([{ name: 'tiny.tar', content: saved }]) }],
  );
  expect(made.code, made.output).toBe(0);
  return name;
}

/** Volumes standing for the push credentials Secret (when given) and the registry's CA. */
async function credentialVolumes(credentials: boolean): Promise<{ creds: string; certs: string }> {
  const creds = await volume();
  const certs = await volume();
  const auth = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
  const filled = await runToEnd(
    {
      Image: PUSH_IMAGE,
      User: '0',
      Entrypoint: ['true'],
      HostConfig: {
        Mounts: [
          { Type: 'volume', Source: creds, Target: '/pier/push-credentials' },
          { Type: 'volume', Source: certs, Target: '/etc/containers/certs.d' },
        ],
      },
    },
    [
      ...(credentials
        ? [{ path: '/pier/push-credentials', tar: await tarOf([{ name: 'config.json', content: JSON.stringify({ auths: { [registryHost]: { auth } } }) }]) }]
        : []),
      { path: '/etc/containers/certs.d', tar: await tarOf([{ name: `${registryHost}/ca.crt`, content: ca }]) },
    ],
  );
  expect(filled.code).toBe(0);
  return { creds, certs };
}

/** The build Job's push container, run as the pod would run it; what it reported. */
async function push(o: { image: string; credentials: boolean; imageVolume: string }): Promise<{ code: number; output: string; result: string }> {
  const target = { buildId: randomUUID(), serviceId: randomUUID(), workspaceId: randomUUID(), vpcId: randomUUID() };
  const job = buildJobManifest(target, o.image, 'Dockerfile', {
    namespace: 'pier-builds',
    buildkitImage: 'moby/buildkit:v0.17.3-rootless',
    pushImage: PUSH_IMAGE,
    pushSecret: o.credentials ? 'registry-push' : undefined,
    timeoutSeconds: 600,
    memoryMiB: 2048,
  });
  const spec = (job as any).spec.template.spec;
  const c = spec.containers.find((x: { name: string }) => x.name === PUSH_CONTAINER);
  const env = (c.env as { name: string; value: string }[]).map((e) => (e.name === 'RESULT' ? { ...e, value: '/tmp/termination-log' } : e));
  const mountOf = (name: string) => (c.volumeMounts as { name: string; mountPath: string }[]).find((m) => m.name === name)!.mountPath;
  const { creds, certs } = await credentialVolumes(o.credentials);
  const run = await runToEnd({
    Image: c.image,
    Entrypoint: c.command,
    Env: env.map((e) => `${e.name}=${e.value}`),
    User: `${spec.securityContext.runAsUser}:${spec.securityContext.runAsGroup}`,
    HostConfig: {
      ReadonlyRootfs: c.securityContext.readOnlyRootFilesystem,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Mounts: [
        { Type: 'volume', Source: o.imageVolume, Target: mountOf('image'), ReadOnly: true },
        { Type: 'volume', Source: await volume(), Target: mountOf('push-tmp') },
        ...(o.credentials ? [{ Type: 'volume' as const, Source: creds, Target: mountOf('push-credentials'), ReadOnly: true }] : []),
        { Type: 'volume', Source: certs, Target: '/etc/containers/certs.d', ReadOnly: true },
      ],
    },
  });
  return { code: run.code, output: run.output, result: await readFileOf(run.container, '/tmp/termination-log').catch(() => '') };
}

beforeAll(async () => {
  registry = await docker.createContainer({ Image: REGISTRY_IMAGE, Env: [`REGISTRY_USER=${USER}`, `REGISTRY_PASSWORD=${PASSWORD}`], Labels: testLabels() });
  await registry.start();
  registryHost = `${(await registry.inspect()).NetworkSettings.IPAddress}:5000`;
  for (let i = 0; ; i++) {
    ca = await readFileOf(registry, '/certs/cert.pem').catch(() => '');
    const up =
      ca &&
      (await registryGet('/v2/').then(
        (r) => r.status === 200,
        () => false,
      ));
    if (up) break;
    if (i > 100) throw new Error('the registry did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
}, 60_000);

afterAll(async () => {
  for (const c of [...containers, registry]) await c?.remove({ force: true, v: true }).catch(() => undefined);
  for (const v of volumes)
    await docker
      .getVolume(v)
      .remove()
      .catch(() => undefined);
}, 60_000);

describe("a Kubernetes build's push step, against a real registry", () => {
  it('pushes the archive with the credentials and reports the digest the registry serves', async () => {
    const image = `${registryHost}/${randomUUID()}:${randomUUID()}`;
    const pushed = await push({ image, credentials: true, imageVolume: await imageVolume() });
    expect(pushed.code, pushed.output).toBe(0);
    expect(pushed.result).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pushed.output).toContain(`pushed ${image}@${pushed.result}`);

    const [repository, tag] = image.slice(registryHost.length + 1).split(':');
    const byTag = await registryGet(`/v2/${repository}/manifests/${tag}`);
    expect(byTag.status).toBe(200);
    expect(byTag.headers['docker-content-digest']).toBe(pushed.result);
    expect(`sha256:${createHash('sha256').update(byTag.body).digest('hex')}`).toBe(pushed.result);
    // And by digest, as a deployment pulls it.
    expect((await registryGet(`/v2/${repository}/manifests/${pushed.result}`)).status).toBe(200);
  }, 120_000);

  it('fails, saying why, without the credentials', async () => {
    const image = `${registryHost}/${randomUUID()}:${randomUUID()}`;
    const pushed = await push({ image, credentials: false, imageVolume: await imageVolume() });
    expect(pushed.code).toBe(1);
    expect(pushed.result).toMatch(/authentication required|unauthorized/i);
    const [repository, tag] = image.slice(registryHost.length + 1).split(':');
    expect((await registryGet(`/v2/${repository}/manifests/${tag}`)).status).toBe(404);
  }, 120_000);

  it('refuses an archive the build container replaced with a link (to the credentials, say)', async () => {
    const planted = await volume();
    const made = await runToEnd(
      {
        Image: PUSH_IMAGE,
        User: '0',
        Entrypoint: ['true'],
        HostConfig: { Mounts: [{ Type: 'volume', Source: planted, Target: '/pier/image' }] },
      },
      [{ path: '/pier/image', tar: await tarOf([{ name: 'image.tar', link: '/pier/push-credentials/config.json' }]) }],
    );
    expect(made.code).toBe(0);
    const pushed = await push({ image: `${registryHost}/${randomUUID()}:1`, credentials: true, imageVolume: planted });
    expect(pushed.code).toBe(1);
    expect(pushed.result).toBe('the build left no image archive\n');
    expect(pushed.output).not.toContain(PASSWORD);
    expect(pushed.output).not.toContain(Buffer.from(`${USER}:${PASSWORD}`).toString('base64'));
  }, 120_000);
});
