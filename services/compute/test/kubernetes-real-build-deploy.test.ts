// Builds on the REAL single-node Kubernetes (deploy/kube/cluster.sh), end to end through
// compute's API: the build Job runs rootless BuildKit (pier/buildkit) on the node, its
// Dockerfile starting FROM an image of the cluster's registry (pier/registry-test, HTTPS with
// its own CA) and running a RUN step; the push container sends the image there; the service's
// Deployment pulls it by digest and its url answers through the ingress controller with what
// only that source holds. From git (the test git server, fetched by compute) and from an
// upload; the log streams BuildKit's steps; a cancelled build's Job is gone within seconds.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vpcNamespace } from '@pier/kit';
import { realKubernetes, startGitServer, type GitServer, type RealKubernetes } from '@pier/testing';
import { onRealCluster, startCompute, until, type Compute } from './support.ts';
import { FINISHED, archive, buildEnv, logMatching, upload, waitForBuild } from './build-support.ts';

let k: RealKubernetes;
let c: Compute;
let git: GitServer;
let cleanup: () => Promise<void>;
let base: string;
let ns: string;

/** A site whose Dockerfile pulls its base from the cluster's registry and runs a step. */
function site(marker: string): Record<string, string> {
  return {
    Dockerfile: `FROM ${base}\nCOPY index.html /www/index.html\nRUN echo "ran as $(id -u)" > /www/step.txt\n`,
    'index.html': `<!doctype html><p>${marker}</p>\n`,
  };
}

async function newService(name: string): Promise<{ id: string; host: string }> {
  const res = await c.post(c.base, { name, port: 8080, health_check_path: '/healthz' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id, host: new URL(res.body.url).hostname };
}

/** What the service answers at `path` through the ingress controller, once it answers 200. */
function servedAt(host: string, path = '/'): Promise<string> {
  return until(
    () => k.viaIngress(host, {}, 10_000, path).catch((err: Error) => ({ status: 0, body: err.message })),
    (r) => r.status === 200,
    120_000,
    500,
  ).then((r) => r.body);
}

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  base = `${k.registry()}/pier/tiny-http:1`;
  git = await startGitServer();
  const setup = await buildEnv(git);
  cleanup = setup.cleanup;
  c = await startCompute({
    ...setup.env,
    ...k.buildSettings(),
    ...onRealCluster(k),
    PIER_BUILD_MEMORY_MIB: '512',
  });
  ns = vpcNamespace(c.vpcId);
}, 120_000);

afterAll(async () => {
  await c?.stop();
  if (k && ns) await k.deleteNamespace(ns);
  await git?.stop();
  await cleanup?.();
}, 60_000);

describe('builds on a real cluster: BuildKit, the registry, the deployment', () => {
  it('builds from git, pushes, deploys by digest, and the url serves what only that commit holds', async () => {
    const marker = `built-on-kubernetes-${randomUUID()}`;
    await git.createRepo('kube-site');
    const commit = await git.commit('kube-site', site(marker), 'first');
    const svc = await newService('from-git');
    const t = Date.now();
    const res = await c.post(`${c.base}/${svc.id}/builds/git`, { repo_url: git.url('kube-site') });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const b = await waitForBuild(c, svc.id, res.body.id, (x) => FINISHED.includes(x.status), 300_000);
    const log = (await c.get(`${c.base}/${svc.id}/builds/${b.id}/logs`)).body.log as string;
    expect(b, log).toMatchObject({ status: 'succeeded', commit_sha: commit, error: null });
    console.log(`git build queued → succeeded: ${Date.now() - t} ms`);
    // The image the registry holds, by the digest the push reported.
    expect(b.image).toMatch(new RegExp(`^${k.registry()}/pier-builds/${svc.id}:${b.id}@sha256:[0-9a-f]{64}$`));
    expect(log).toMatch(/FROM .*pier\/tiny-http:1/);
    expect(log).toMatch(/RUN echo "ran as/);
    expect(log).toContain(`pushed ${k.registry()}/pier-builds/${svc.id}:${b.id}@sha256:`);

    expect(await servedAt(svc.host)).toContain(marker);
    console.log(`git build queued → its service answering through the ingress: ${Date.now() - t} ms`);
    // The RUN step ran as the image's root, which is the build's user namespace's.
    expect(await servedAt(svc.host, '/step.txt')).toContain('ran as 0');
    const pods = await k.list(`/api/v1/namespaces/${ns}/pods`, `pier.dev/service=${svc.id}`);
    expect(pods.map((p) => p.spec.containers[0].image)).toContain(b.image);
  }, 420_000);

  it('builds an upload the same way, and streams its log as it goes', async () => {
    const marker = `uploaded-to-kubernetes-${randomUUID()}`;
    const svc = await newService('from-upload');
    const files = site(marker);
    const body = await archive(Object.entries(files).map(([name, content]) => ({ name, content })));
    const res = await upload(c, svc.id, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // BuildKit's own progress, while the build runs.
    await logMatching(c, svc.id, res.body.id, /\[internal\] load build definition/, 180_000);
    const b = await waitForBuild(c, svc.id, res.body.id, (x) => FINISHED.includes(x.status), 300_000);
    expect(b.status, JSON.stringify(b)).toBe('succeeded');
    expect(await servedAt(svc.host)).toContain(marker);
  }, 420_000);

  it('cancels a build in the middle of a step: cancelled within seconds, and its Job is gone', async () => {
    const svc = await newService('sleepy');
    const marker = randomUUID();
    const body = await archive([{ name: 'Dockerfile', content: `FROM ${base}\nRUN echo ${marker} && sleep 600\n` }]);
    const res = await upload(c, svc.id, body);
    expect(res.status).toBe(202);
    await logMatching(c, svc.id, res.body.id, new RegExp(`RUN echo ${marker}`), 180_000);
    const asked = Date.now();
    expect((await c.post(`${c.base}/${svc.id}/builds/${res.body.id}/cancel`)).status).toBe(202);
    const b = await waitForBuild(c, svc.id, res.body.id, (x) => FINISHED.includes(x.status), 30_000);
    expect(b).toMatchObject({ status: 'cancelled', image: null });
    console.log(`build cancelled in ${Date.now() - asked} ms`);
    await until(
      () => k.list('/apis/batch/v1/namespaces/pier-builds/jobs', `pier.dev/build=${b.id}`),
      (jobs) => jobs.length === 0,
      30_000,
      500,
    );
  }, 300_000);
});
