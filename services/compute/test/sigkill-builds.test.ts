// Builds across a crash of compute, for real: compute runs as its own process, a crash point
// (PIER_CRASH_AT) SIGKILLs it in the middle of a build, and the next process on the same
// records and the same Docker engine must converge — never a build left `running`, never a
// deployment made twice, never a step container left behind.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminQuery, createTestDatabase, infra, removeVpcObjects, startGitServer, type GitServer } from '@pier/testing';
import { ComputeProcess } from './compute-process.ts';
import { until, type TestDatabase } from './support.ts';
import { buildEnv, imageExists, removeBuiltImages, served, site, sleeper, sleeperContainers } from './build-support.ts';

let db: TestDatabase;
let git: GitServer;
let compute: ComputeProcess;
let cleanup: () => Promise<void>;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
let svc: string;
const marker = randomUUID();

const buildRow = async (id: string) => (await adminQuery(db.adminUrl, 'select status, image, error, deployment_id from compute.builds where id = $1', [id]))[0];

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  git = await startGitServer();
  await git.createRepo('site');
  await git.commit('site', site(`recovered-${randomUUID()}`), 'first');
  await git.createRepo('sleeper');
  await git.commit('sleeper', sleeper(marker), 'sleeps');
  const setup = await buildEnv(git);
  cleanup = setup.cleanup;
  compute = await ComputeProcess.start(db, { workspaceId, vpcId }, setup.env);
  const created = await compute.call('POST', base, { name: 'crashy', port: 8080, health_check_path: '/healthz' });
  expect(created.status).toBe(201);
  svc = created.body.id;
}, 120_000);

afterAll(async () => {
  await compute?.stop();
  await removeVpcObjects(vpcId);
  await removeBuiltImages(svc);
  await git?.stop();
  await cleanup?.();
  await db?.drop();
}, 120_000);

describe('SIGKILL of compute in the middle of a build', () => {
  it('in the middle of a build step: the next process fails the build with the reason, and no step container is left', async () => {
    let id = '';
    await compute.crashAt('compute.build.step-running', async () => {
      id = (await compute.call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('sleeper') })).body.id;
    });
    expect((await buildRow(id)).status).toBe('running');
    await compute.spawn();
    const row = await until(
      () => buildRow(id),
      (r) => r.status !== 'running',
    );
    expect(row).toMatchObject({ status: 'failed', image: null });
    expect(row.error).toMatch(/^compute restarted while this build ran .*; start it again$/);
    // The engine dropped the build with its client: no container still runs a step of it.
    await until(
      () => sleeperContainers(marker),
      (ids) => ids.length === 0,
      15_000,
    );
  });

  it('after the image was made but before it was recorded: the next process records and deploys it', async () => {
    let id = '';
    await compute.crashAt('compute.build.built', async () => {
      id = (await compute.call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('site') })).body.id;
    });
    expect(await buildRow(id)).toMatchObject({ status: 'running', image: null });
    expect(await imageExists(`pier-build/${svc}:${id}`)).toBe(true);
    await compute.spawn();
    const row = await until(
      () => buildRow(id),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(row).toMatchObject({ status: 'succeeded', image: `pier-build/${svc}:${id}` });
    const service = await until(
      () => compute.call('GET', `${base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running' && s.current_deployment_id === row.deployment_id,
      60_000,
    );
    expect(await served(vpcId, svc, service.current_deployment_id)).toMatch(/recovered-/);
  });

  it('after the deployment was made but before the build recorded it: finished with that deployment, not a second one', async () => {
    let id = '';
    await compute.crashAt('compute.build.deployed', async () => {
      id = (await compute.call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('site') })).body.id;
    });
    const image = `pier-build/${svc}:${id}`;
    expect(await buildRow(id)).toMatchObject({ status: 'running', image, deployment_id: null });
    await compute.spawn();
    const row = await until(
      () => buildRow(id),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(row.status).toBe('succeeded');
    const deployments = await adminQuery(db.adminUrl, 'select id from compute.deployments where image = $1', [image]);
    expect(deployments.map((d) => d.id)).toEqual([row.deployment_id]);
  });
});
