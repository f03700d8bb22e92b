// One Docker engine runs every team's containers and holds every team's builds. The engine
// takes any unique prefix of an image's ID where a name is expected, so a tenant naming an
// image `f8` would run whichever image's ID starts with f8, and could count through them to
// any team's build. Neither a deploy nor a build may reach an image its workspace may not
// use: another workspace's build (by its tag, with or without Docker Hub's domain) or any
// image by its ID. Both read as an image the engine does not have.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanDocker, docker, startCompute, TINY_HTTP, until, vpcContainers, type Compute } from './support.ts';
import { archive, upload, waitForBuild } from './build-support.ts';

let c: Compute;
let work: string;
const made: string[] = [];

/** An image as a build of `workspaceId` makes it: tagged pier-build/<service>:<build>, with a build's labels. */
async function buildOf(workspaceId: string, marker: string): Promise<string> {
  const service = randomUUID();
  const tag = `pier-build/${service}:${randomUUID()}`;
  const pack = tar.pack();
  pack.entry({ name: 'Dockerfile' }, `FROM ${TINY_HTTP}\nRUN echo ${marker} > /marker\n`);
  pack.finalize();
  const stream = await docker.buildImage(pack as unknown as NodeJS.ReadableStream, {
    t: tag,
    labels: { 'pier.managed': 'true', 'pier.kind': 'build', 'pier.workspace': workspaceId, 'pier.service': service },
  });
  await new Promise((resolve, reject) => docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve(undefined))));
  made.push(tag);
  return tag;
}

/** A service created with `image`, once its first deployment is over. */
async function createWith(image: string): Promise<{ id: string; deployment: any; status: string }> {
  const res = await c.post(c.base, { name: `img-${randomUUID().slice(0, 8)}`, image, health_check_path: '/healthz' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const deployment = (await c.get(`${c.base}/${res.body.id}/deployments`)).body.items[0];
  return { id: res.body.id, deployment, status: res.body.status };
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'pier-image-access-'));
  c = await startCompute({ PIER_BUILD_WORK_DIR: work, PIER_BUILD_INTERVAL_MS: '300' });
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (c) await cleanDocker(c.vpcId);
  for (const tag of made)
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
  await rm(work, { recursive: true, force: true });
}, 60_000);

describe('images a workspace may not use, on the docker engine', () => {
  let foreign: string;
  let own: string;

  beforeAll(async () => {
    foreign = await buildOf(randomUUID(), 'another team');
    own = await buildOf(c.workspaceId, 'this team');
  }, 120_000);

  it("does not run another workspace's build, nor any image by its ID: not available, nothing started", async () => {
    const { Id } = await docker.getImage(TINY_HTTP).inspect();
    const foreignId = (await docker.getImage(foreign).inspect()).Id;
    for (const image of [foreign, `docker.io/${foreign}`, `index.docker.io/${foreign}`, Id, Id.slice('sha256:'.length, 19), foreignId.slice(7, 19)]) {
      const s = await createWith(image);
      expect(s.deployment, image).toMatchObject({ status: 'failed', message: `image ${image} is not available in the cluster (no such image)` });
      expect(s.status, image).toBe('crashed');
      expect(await vpcContainers(c.vpcId, s.id), image).toEqual([]);
    }
  });

  it("runs the workspace's own build, from the image's ID as checked", async () => {
    const s = await createWith(own);
    expect(s.deployment.status).not.toBe('failed');
    await until(
      () => c.get(`${c.base}/${s.id}`).then((r) => r.body.status),
      (status) => status === 'running',
      60_000,
    );
    const [container] = await vpcContainers(c.vpcId, s.id);
    expect(container!.ImageID).toBe((await docker.getImage(own).inspect()).Id);
  });

  it("fails a build from another workspace's build or an ID, in FROM or COPY --from, before the engine sees it", async () => {
    const svc = (await c.post(c.base, { name: 'builder', port: 8080 })).body.id;
    const { Id } = await docker.getImage(TINY_HTTP).inspect();
    const prefix = Id.slice(7, 19);
    for (const [dockerfile, image] of [
      [`FROM ${foreign}\n`, foreign],
      [`ARG BASE=docker.io/${foreign}\nFROM \${BASE}\n`, `docker.io/${foreign}`],
      [`FROM ${prefix}\n`, prefix],
      [`FROM ${TINY_HTTP}\nCOPY --from=${foreign} /marker /stolen\n`, foreign],
    ]) {
      const res = await upload(c, svc, await archive([{ name: 'Dockerfile', content: dockerfile! }]));
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const b = await waitForBuild(c, svc, res.body.id);
      expect(b, dockerfile).toMatchObject({ status: 'failed', error: `Dockerfile: image ${image} is not available in the cluster (no such image)` });
    }
    // The workspace's own build is a base like any other.
    const res = await upload(c, svc, await archive([{ name: 'Dockerfile', content: `FROM ${own}\nRUN cat /marker\n` }]));
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b.status, b.error).toBe('succeeded');
    made.push(b.image);
  });
});
