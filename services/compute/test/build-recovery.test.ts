// Builds across a crash of compute, for real: compute runs as its own process, a crash point
// (PIER_CRASH_AT) SIGKILLs it in the middle of a build, and the next process on the same
// records and the same Docker engine must converge — never a build left `running`, never a
// deployment made twice, never a step container left behind.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, generateIdentityKeys, importIdentityKey, signIdentity } from '@pier/kit';
import { adminQuery, createTestDatabase, infra, removeVpcObjects, spawnService, startGitServer, type GitServer, type ServiceProcess } from '@pier/testing';
import { until, type TestDatabase } from './support.ts';
import { buildEnv, imageExists, removeBuiltImages, served, site, sleeper, sleeperContainers } from './build-support.ts';

let db: TestDatabase;
let git: GitServer;
let proc: ServiceProcess | undefined;
let common: Record<string, string>;
let token: string;
let cleanup: () => Promise<void>;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
let svc: string;
const marker = randomUUID();

async function spawn(env: Record<string, string> = {}): Promise<ServiceProcess> {
  // PIER_CRASH_AT may be in this process's own environment: only `env` arms it.
  proc = await spawnService('compute', { ...common, PIER_CRASH_AT: '', ...env });
  return proc;
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${proc!.httpPort}${path}`, {
    method,
    headers: { [IDENTITY_HEADER]: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Starts a process armed to die at `point`, runs `act`, and waits for the death. */
async function crashAt(point: string, act: () => Promise<unknown>): Promise<void> {
  await proc?.stop();
  const armed = await spawn({ PIER_CRASH_AT: point });
  await act();
  const how = await armed.exited;
  // tsx relays its child's death by SIGKILL as exit status 128 + 9.
  expect([137, 'SIGKILL'], armed.output()).toContain(how);
}

const buildRow = async (id: string) => (await adminQuery(db.adminUrl, 'select status, image, error, deployment_id from compute.builds where id = $1', [id]))[0];

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  git = await startGitServer();
  await git.createRepo('site');
  await git.commit('site', site(`recovered-${randomUUID()}`), 'first');
  await git.createRepo('sleeper');
  await git.commit('sleeper', sleeper(marker), 'sleeps');
  const keys = await generateIdentityKeys();
  token = await signIdentity(await importIdentityKey(keys.privateJwk), { kind: 'user', subject: randomUUID(), role: 'owner', workspaceId, vpcId }, 3600);
  const setup = await buildEnv(git);
  cleanup = setup.cleanup;
  common = {
    PIER_DATABASE_URL: db.urls.compute,
    PIER_NATS_URL: infra().natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_COMPUTE_HTTP_PORT: '0',
    // spawnService learns the port from the "listening" line.
    PIER_LOG_LEVEL: 'info',
    PIER_COMPUTE_RECONCILE_INTERVAL_MS: '500',
    ...setup.env,
  };
  await spawn();
  const created = await call('POST', base, { name: 'crashy', port: 8080, health_check_path: '/healthz' });
  expect(created.status).toBe(201);
  svc = created.body.id;
}, 120_000);

afterAll(async () => {
  await proc?.stop();
  await removeVpcObjects(vpcId);
  await removeBuiltImages(svc);
  await git?.stop();
  await cleanup?.();
  await db?.drop();
}, 120_000);

describe('a crash of compute', () => {
  it('in the middle of a build step: the next process fails the build with the reason, and no step container is left', async () => {
    let id = '';
    await crashAt('compute.build.step-running', async () => {
      id = (await call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('sleeper') })).body.id;
    });
    expect((await buildRow(id)).status).toBe('running');
    await spawn();
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
    await crashAt('compute.build.built', async () => {
      id = (await call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('site') })).body.id;
    });
    expect(await buildRow(id)).toMatchObject({ status: 'running', image: null });
    expect(await imageExists(`pier-build/${svc}:${id}`)).toBe(true);
    await spawn();
    const row = await until(
      () => buildRow(id),
      (r) => r.status !== 'running',
      60_000,
    );
    expect(row).toMatchObject({ status: 'succeeded', image: `pier-build/${svc}:${id}` });
    const service = await until(
      () => call('GET', `${base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running' && s.current_deployment_id === row.deployment_id,
      60_000,
    );
    expect(await served(vpcId, svc, service.current_deployment_id)).toMatch(/recovered-/);
  });

  it('after the deployment was made but before the build recorded it: finished with that deployment, not a second one', async () => {
    let id = '';
    await crashAt('compute.build.deployed', async () => {
      id = (await call('POST', `${base}/${svc}/builds/git`, { repo_url: git.url('site') })).body.id;
    });
    const image = `pier-build/${svc}:${id}`;
    expect(await buildRow(id)).toMatchObject({ status: 'running', image, deployment_id: null });
    await spawn();
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
