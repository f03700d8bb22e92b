// SIGKILL of compute in the middle of a rollout (a create with an image, a deploy), for real:
// compute runs as its own process, a crash point (PIER_CRASH_AT) kills it between the cluster
// call and the commit (and after the commit, before the answer; and inside the cluster call,
// between creating a container and starting it), and the next process on the same records
// and the same Docker engine must converge within a bound: a create that never committed
// undone (no record, no container, no volume), a deploy the cluster already runs committed,
// a committed one settled, a teardown the cluster already did soft-deleted; no service or
// deployment left in a transitional status, no container or volume that no record accounts for.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminQuery, createTestDatabase, infra, removeVpcObjects } from '@pier/testing';
import { ComputeProcess } from './compute-process.ts';
import { until, vpcContainers, TINY_HTTP, type TestDatabase } from './support.ts';
import { volumesOf } from './disk-backup-support.ts';

/** How long the next process may take to converge after its start. */
const CONVERGE_MS = 30_000;

let db: TestDatabase;
let compute: ComputeProcess;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
/** The service that lives through the deploy crashes. */
let svc: string;

const sql = (query: string, params: unknown[] = []) => adminQuery(db.adminUrl, query, params);
const serviceRow = async (id: string) => (await sql('select status, provisioned, current_deployment_id from compute.services where id = $1', [id]))[0];
const deploymentRow = async (id: string) => (await sql('select status, applied from compute.deployments where id = $1', [id]))[0];
const pendingOf = async (id: string) => (await sql(`select id from compute.deployments where service_id = $1 and status = 'pending'`, [id])).map((r) => r.id);
const eventsOf = async (id: string) =>
  (await sql(`select kind, payload->'data' as data from compute.outbox where payload->>'resource_id' = $1 order by id`, [id])) as { kind: string; data: any }[];
/** A create with a disk, so a volume is among what must not be left behind. */
const createBody = (name: string) => ({ name, image: TINY_HTTP, health_check_path: '/healthz', disk_size_gb: 1, disk_mount_path: '/data' });

/**
 * What every crash must come back to: no service or deployment in a transitional status, no
 * service without its record made visible, and every container and volume of the VPC one
 * of a live service (a container, of its current deployment).
 */
async function converged(): Promise<void> {
  const services = await sql('select id, status, provisioned, current_deployment_id from compute.services where deleted_at is null');
  expect(services.filter((s) => !s.provisioned || ['creating', 'deploying', 'restarting', 'deleting'].includes(s.status))).toEqual([]);
  expect(await sql(`select id, status from compute.deployments where status in ('pending', 'deploying')`)).toEqual([]);
  const current = new Map(services.map((s) => [s.id as string, s.current_deployment_id as string]));
  const strays = (await vpcContainers(vpcId)).filter((c) => current.get(c.Labels['pier.service']!) !== c.Labels['pier.deployment']);
  expect(strays.map((c) => ({ name: c.Names[0], state: c.State }))).toEqual([]);
  for (const s of services) expect((await volumesOf(s.id)).length).toBeLessThanOrEqual(1);
}

/** The service that a crash must not leave: its record, containers and volume all gone. */
async function undone(id: string): Promise<void> {
  await until(
    async () => ({ rows: (await sql('select id from compute.services where id = $1', [id])).length, containers: (await vpcContainers(vpcId, id)).length }),
    (left) => left.rows === 0 && left.containers === 0,
    CONVERGE_MS,
  );
  expect(await volumesOf(id)).toEqual([]);
  expect(await eventsOf(id)).toEqual([]);
}

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  compute = await ComputeProcess.start(db, { workspaceId, vpcId });
}, 60_000);

afterAll(async () => {
  await compute?.stop();
  await removeVpcObjects(vpcId);
  await db?.drop();
}, 120_000);

describe('SIGKILL of compute in the middle of a rollout or a teardown', () => {
  it('create with an image, between the cluster call and the commit: undone, nothing left in the cluster', async () => {
    await compute.crashAt('compute.rollout.applied', () => compute.call('POST', base, createBody('cut')));
    const [left] = await sql(`select id, provisioned from compute.services where name = 'cut'`);
    expect(left.provisioned).toBe(false);
    expect((await vpcContainers(vpcId, left.id)).length).toBe(1); // the cluster had it
    expect(await volumesOf(left.id)).toHaveLength(1);

    await compute.spawn();
    await undone(left.id);
    await converged();
  });

  it('create with an image, between creating the container and starting it: undone', async () => {
    await compute.crashAt('compute.rollout.container-created', () => compute.call('POST', base, createBody('cut')));
    const [left] = await sql(`select id, provisioned from compute.services where name = 'cut'`);
    expect(left.provisioned).toBe(false);
    expect((await vpcContainers(vpcId, left.id)).map((c) => c.State)).toEqual(['created']);

    await compute.spawn();
    await undone(left.id);
    await converged();
    // The name is free again: this one lives through the deploy crashes below.
    const created = await compute.call('POST', base, createBody('cut'));
    expect(created.status).toBe(201);
    svc = created.body.id;
    await until(
      () => serviceRow(svc),
      (s) => s.status === 'running',
      CONVERGE_MS,
    );
  });

  it('deploy, between the cluster call and the commit: the deployment the cluster runs is committed and settles', async () => {
    const before = (await serviceRow(svc)).current_deployment_id;
    await compute.crashAt('compute.rollout.applied', () => compute.call('POST', `${base}/${svc}/deploy`, { image_tag: TINY_HTTP }));
    const [pending] = await pendingOf(svc);
    expect(pending).toBeDefined();
    expect((await serviceRow(svc)).current_deployment_id).toBe(before);
    // apply retired the old deployment's replica once the new one was up.
    expect((await vpcContainers(vpcId, svc)).map((c) => c.Labels['pier.deployment'])).toEqual([pending]);

    await compute.spawn();
    // Read from the records, not through the API: the reconciler must settle it unasked.
    await until(
      () => serviceRow(svc),
      (s) => s.status === 'running' && s.current_deployment_id === pending,
      CONVERGE_MS,
    );
    expect(await deploymentRow(pending)).toEqual({ status: 'succeeded', applied: true });
    const requested = (await eventsOf(svc)).filter((e) => e.kind === 'service.deployment_requested').map((e) => e.data.deployment_id);
    expect(requested.filter((d) => d === pending)).toHaveLength(1);
    await converged();
  });

  it('deploy, between creating the new container and starting it: finished on the new deployment', async () => {
    await compute.crashAt('compute.rollout.container-created', () => compute.call('POST', `${base}/${svc}/deploy`, { image_tag: TINY_HTTP }));
    const [pending] = await pendingOf(svc);
    expect(pending).toBeDefined();
    const fresh = (await vpcContainers(vpcId, svc)).filter((c) => c.Labels['pier.deployment'] === pending);
    expect(fresh.map((c) => c.State)).toEqual(['created']);

    await compute.spawn();
    await until(
      () => serviceRow(svc),
      (s) => s.status === 'running' && s.current_deployment_id === pending,
      CONVERGE_MS,
    );
    expect((await deploymentRow(pending)).status).toBe('succeeded');
    await converged();
  });

  it('deploy, after the commit and before the answer: the reconciler settles it running', async () => {
    await compute.crashAt('compute.rollout.committed', () => compute.call('POST', `${base}/${svc}/deploy`, { image_tag: TINY_HTTP }));
    const left = await serviceRow(svc);
    expect(left.status).toBe('deploying');
    expect(await deploymentRow(left.current_deployment_id)).toEqual({ status: 'deploying', applied: true });

    await compute.spawn();
    await until(
      () => serviceRow(svc),
      (s) => s.status === 'running',
      CONVERGE_MS,
    );
    expect((await deploymentRow(left.current_deployment_id)).status).toBe('succeeded');
    const finished = (await eventsOf(svc)).filter((e) => e.kind === 'service.deployment_finished' && e.data.deployment_id === left.current_deployment_id);
    expect(finished.map((e) => e.data.status)).toEqual(['succeeded']);
    await converged();
  });

  it('delete, between the cluster delete and the soft delete: the teardown is finished', async () => {
    await compute.crashAt('compute.teardown.deleted', () => compute.call('DELETE', `${base}/${svc}`));
    expect((await serviceRow(svc)).status).toBe('deleting');
    expect(await vpcContainers(vpcId, svc)).toEqual([]);

    await compute.spawn();
    await until(
      () => sql('select status, deleted_at from compute.services where id = $1', [svc]),
      (rows) => rows[0].status === 'deleted' && rows[0].deleted_at !== null,
      CONVERGE_MS,
    );
    expect(await volumesOf(svc)).toEqual([]);
    expect((await eventsOf(svc)).filter((e) => e.kind === 'service.deleted')).toHaveLength(1);
    await converged();
  });
});

// A keyed create retried after the kill: exactly one service and one set of replicas, and
// the retry answers as the first attempt would have (kit's Idempotency-Key).
describe('a keyed service create retried after SIGKILL', () => {
  for (const [point, when] of [
    ['compute.rollout.applied', 'with its replicas started and nothing committed'],
    ['compute.rollout.committed', 'after its commit, before the answer'],
  ] as const) {
    it(`killed ${when}: the retry answers 201 and there is one service, with one set of replicas`, async () => {
      const name = `keyed-${point.split('.').pop()}`;
      const key = randomUUID();
      const body = { name, image: TINY_HTTP, min_replicas: 2 };
      await compute.crashAt(point, () => compute.call('POST', base, body, { 'idempotency-key': key }));
      await compute.spawn();

      const retry = await compute.call('POST', base, body, { 'idempotency-key': key });
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(retry.body).toMatchObject({ name, image: TINY_HTTP });
      const again = await compute.call('POST', base, body, { 'idempotency-key': key });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.id).toBe(retry.body.id);

      const rows = await sql('select id, provisioned, status from compute.services where name = $1', [name]);
      expect(rows).toEqual([{ id: retry.body.id, provisioned: true, status: expect.any(String) }]);
      await until(
        () => compute.call('GET', `${base}/${retry.body.id}`).then((r) => r.body),
        (s) => s.status === 'running',
        60_000,
      );
      // The first attempt's replicas (of a service id that no longer exists, or of this one) are not left beside.
      await until(
        async () => (await vpcContainers(vpcId)).filter((c) => c.Labels['pier.service'] !== retry.body.id && c.State === 'running'),
        (strays) => strays.length === 0,
        30_000,
      );
      expect((await vpcContainers(vpcId)).filter((c) => c.Labels['pier.service'] === retry.body.id).filter((c) => c.State === 'running')).toHaveLength(2);
      await compute.call('DELETE', `${base}/${retry.body.id}`);
      await until(
        async () => (await vpcContainers(vpcId)).filter((c) => c.Labels['pier.service'] === retry.body.id),
        (left) => left.length === 0,
        30_000,
      );
    }, 180_000);
  }
});
