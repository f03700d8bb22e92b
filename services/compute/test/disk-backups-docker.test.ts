// Disk backups on the real Docker engine: a web service (pier/tiny-http) with a disk, a file
// written on it by the service's own user, backed up into the store volume, changed, restored;
// the scheduler driven with a clock of the test's own; retention; the refusals.
import { randomUUID } from 'node:crypto';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { adminQuery, infra } from '@pier/testing';
import { startCompute, until, cleanDocker, docker, TINY_HTTP, type Compute } from './support.ts';
import { BACKUP_VOLUME, ensureBackupVolume, loseArchive, replicaOf, shellIn, storedBackups, volumesOf } from './disk-backup-support.ts';

let c: Compute;
let nc: NatsConnection;
const seen: { kind: string; resource_id: string; data: Record<string, any> }[] = [];

beforeAll(async () => {
  await ensureBackupVolume();
  // The scheduler's own passes are an hour apart: the test drives it (runDiskBackupsDue).
  c = await startCompute({ PIER_COMPUTE_BACKUP_VOLUME: BACKUP_VOLUME, PIER_COMPUTE_BACKUP_INTERVAL_MS: '3600000' });
  nc = await connect({ servers: infra().natsUrl });
  const sub = nc.subscribe(`pier.events.${c.workspaceId}.${c.vpcId}.>`);
  void (async () => {
    for await (const m of sub) seen.push(JSON.parse(new TextDecoder().decode(m.data)));
  })();
}, 60_000);

afterAll(async () => {
  await c?.stop();
  await nc?.close();
  if (c) await cleanDocker(c.vpcId);
}, 60_000);

const one = (id: string) => `${c.base}/${id}`;
const backups = async (id: string) => (await c.get(`${one(id)}/backups`)).body;
const serviceOf = (id: string) => c.get(one(id)).then((r) => r.body);
const sql = (query: string, params: unknown[] = []) => adminQuery(c.db.adminUrl, query, params);

async function completed(serviceId: string, backupId: string): Promise<any> {
  const list = await until(
    () => backups(serviceId),
    (l) => l.items.some((b: any) => b.id === backupId && b.status !== 'running'),
    60_000,
  );
  return list.items.find((b: any) => b.id === backupId);
}

const kinds = (serviceId: string) => seen.filter((e) => e.resource_id === serviceId).map((e) => e.kind);

let store: any;

describe('disk backups on docker', () => {
  it('refuses a service without a disk: 409 no_disk, naming the reason', async () => {
    const plain = (await c.post(c.base, { name: 'plain', image: TINY_HTTP })).body;
    for (const res of [
      await c.post(`${one(plain.id)}/backups`),
      await c.post(`${one(plain.id)}/backups/restore`, { backup_id: randomUUID() }),
      await c.request('PUT', `${one(plain.id)}/backups/schedule`, { schedule: '@daily' }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'no_disk', error: expect.stringMatching(/has no disk/) });
    }
    expect(await backups(plain.id)).toEqual({ items: [], next_cursor: null, restore: null, schedule: null });
  });

  it('backs up a disk, then restores it: the original content and owner come back, and the service runs again', async () => {
    store = (await c.post(c.base, { name: 'store', image: TINY_HTTP, health_check_path: '/healthz', disk_size_gb: 1, disk_mount_path: '/data' })).body;
    await until(
      () => serviceOf(store.id),
      (s) => s.status === 'running',
    );
    const written = await shellIn(await replicaOf(c.vpcId, store.id), 'echo original > /data/note.txt && mkdir /data/sub && echo nested > /data/sub/deep.txt');
    expect(written).toEqual({ code: 0, out: '' });
    const owners = (await shellIn(await replicaOf(c.vpcId, store.id), 'stat -c %u:%g /data/note.txt /data/sub/deep.txt /data')).out;
    expect(owners).toMatch(/^1000:\d+\n1000:\d+\n1000:1000\n$/);

    const res = await c.post(`${one(store.id)}/backups`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ service_id: store.id, status: 'running', method: 'manual', size_bytes: null, completed_at: null, error: null });
    const backup = await completed(store.id, res.body.id);
    expect(backup).toMatchObject({ status: 'completed', error: null });
    expect(backup.size_bytes).toBeGreaterThan(0);
    expect(await storedBackups(store.id)).toEqual([backup.id]);
    // The replicas were frozen for the copy only: the service runs, on the same container.
    expect((await serviceOf(store.id)).status).toBe('running');

    const replica = await replicaOf(c.vpcId, store.id);
    expect((await shellIn(replica, 'echo changed > /data/note.txt && rm -r /data/sub && echo new > /data/extra.txt')).code).toBe(0);

    const restore = await c.post(`${one(store.id)}/backups/restore`, { backup_id: backup.id });
    expect(restore.status).toBe(202);
    expect(restore.body.service).toMatchObject({ id: store.id, status: 'restoring', status_message: expect.stringContaining(backup.id) });
    expect(restore.body.restore).toMatchObject({ backup_id: backup.id, status: 'running', error: null });
    // Changes wait for the restore (the replicas need at least 3 s to count as ready again).
    expect((await c.request('PATCH', one(store.id), { instance_type: 'svc.micro' })).body.code).toBe('service_restoring');
    expect((await c.post(`${one(store.id)}/backups`)).body.code).toBe('restore_in_progress');
    expect((await serviceOf(store.id)).status).toBe('restoring');

    const done = await until(
      () => backups(store.id),
      (l) => l.restore?.status !== 'running',
      60_000,
    );
    expect(done.restore).toMatchObject({ id: restore.body.restore.id, status: 'completed', error: null, finished_at: expect.any(String) });
    expect(await serviceOf(store.id)).toMatchObject({ status: 'running', status_message: null });

    const after = await replicaOf(c.vpcId, store.id);
    expect(after).not.toBe(replica);
    expect((await shellIn(after, 'cat /data/note.txt /data/sub/deep.txt; ls /data')).out).toBe('original\nnested\nnote.txt\nsub\n');
    expect((await shellIn(after, 'stat -c %u:%g /data/note.txt /data/sub/deep.txt /data')).out).toBe(owners);
    // Restored into a new volume, which the replica mounts; the old one is gone.
    const mounts = (await docker.getContainer(after).inspect()).Mounts;
    const volume = `pier-disk-${store.id}-${restore.body.restore.id.slice(0, 8)}`;
    expect(mounts).toEqual([expect.objectContaining({ Type: 'volume', Name: volume, Destination: '/data' })]);
    expect(await volumesOf(store.id)).toEqual([volume]);

    await until(
      () => Promise.resolve(kinds(store.id)),
      (k) => k.includes('service.backup.restored'),
      10_000,
    );
    expect(kinds(store.id)).toEqual(expect.arrayContaining(['service.backup.started', 'service.backup.completed', 'service.backup.restore_started']));
    const statuses = seen.filter((e) => e.resource_id === store.id && e.kind === 'service.status_changed').map((e) => `${e.data.from}>${e.data.to}`);
    expect(statuses).toEqual(expect.arrayContaining(['running>restoring', 'restoring>running']));
  }, 180_000);

  it('a second backup of the restored disk copies the new volume', async () => {
    const res = await c.post(`${one(store.id)}/backups`);
    expect((await completed(store.id, res.body.id)).status).toBe('completed');
    const list = await backups(store.id);
    expect(list.items.map((b: any) => b.id)).toEqual([res.body.id, list.items[1].id]);
  });

  it('one backup or restore at a time: 409 while one runs', async () => {
    // What a backup in progress looks like to the rules, held still for the test.
    const [running] = await sql(`insert into compute.disk_backups (service_id, status, method) values ($1, 'running', 'manual') returning id`, [store.id]);
    try {
      const [done] = (await backups(store.id)).items.filter((b: any) => b.status === 'completed');
      expect((await c.post(`${one(store.id)}/backups`)).body).toMatchObject({ code: 'backup_in_progress', error: expect.stringContaining(running.id) });
      expect((await c.post(`${one(store.id)}/backups/restore`, { backup_id: done.id })).body.code).toBe('backup_in_progress');
    } finally {
      await sql('delete from compute.disk_backups where id = $1', [running.id]);
    }
    const [failed] = await sql(`insert into compute.disk_backups (service_id, status, method, error) values ($1, 'failed', 'manual', 'lost') returning id`, [
      store.id,
    ]);
    try {
      expect((await c.post(`${one(store.id)}/backups/restore`, { backup_id: failed.id })).body).toMatchObject({
        code: 'backup_not_completed',
        error: expect.stringContaining('failed (lost)'),
      });
    } finally {
      await sql('delete from compute.disk_backups where id = $1', [failed.id]);
    }
  });

  it('answers bad input with 400 naming the field, an unknown backup with 404, never 500', async () => {
    const restore = `${one(store.id)}/backups/restore`;
    expect(await c.post(restore, { backup_id: randomUUID() })).toMatchObject({ status: 404, body: { code: 'backup_not_found' } });
    expect(await c.post(restore, { backup_id: 'not-an-id' })).toMatchObject({ status: 404, body: { code: 'backup_not_found' } });
    expect(await c.post(restore, {})).toMatchObject({ status: 400, body: { field: 'backup_id' } });
    expect(await c.post(restore, { backup_id: randomUUID(), force: true })).toMatchObject({ status: 400 });
    const schedule = `${one(store.id)}/backups/schedule`;
    expect(await c.request('PUT', schedule, { schedule: 'every day' })).toMatchObject({ status: 400, body: { field: 'schedule' } });
    expect(await c.request('PUT', schedule, { schedule: '0 3 * * *', retention_count: 0 })).toMatchObject({ status: 400, body: { field: 'retention_count' } });
    expect(await c.request('PUT', schedule, { schedule: '0 3 * * *', retention_count: 'two' })).toMatchObject({
      status: 400,
      body: { field: 'retention_count' },
    });
    expect(await c.request('PUT', schedule, {})).toMatchObject({ status: 400, body: { field: 'schedule' } });
    // NUL characters (which PostgreSQL cannot store) never reach the database.
    expect(await c.request('PUT', schedule, { schedule: '0 3 * * *\u0000' })).toMatchObject({ status: 400, body: { field: 'schedule' } });
    expect(await c.post(restore, { backup_id: `${randomUUID()}\u0000` })).toMatchObject({ status: 400, body: { field: 'backup_id' } });
    expect(await c.get(`${one(store.id)}/backups?limit=0`)).toMatchObject({ status: 400, body: { field: 'limit' } });
    expect(await c.get(`${one(store.id)}/backups?cursor=nope`)).toMatchObject({ status: 400, body: { code: 'invalid_cursor' } });
    expect((await c.post(`${one(randomUUID())}/backups`)).status).toBe(404);
    expect((await c.post(`${one(store.id)}/backups`, undefined, 'developer')).status).toBe(403);
    expect((await c.get(`${one(store.id)}/backups`, 'viewer')).status).toBe(200);
  });

  it('runs a schedule when due (a clock of the test’s own) and keeps retention_count scheduled backups', async () => {
    const put = await c.request('PUT', `${one(store.id)}/backups/schedule`, { schedule: '0 3 * * *', retention_count: 2 });
    expect(put.status).toBe(200);
    const next = new Date(put.body.next_run_at);
    expect(put.body).toMatchObject({ service_id: store.id, schedule: '0 3 * * *', retention_count: 2 });
    expect(next.getUTCHours()).toBe(3);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    const manual = (await backups(store.id)).items.map((b: any) => b.id);

    // Not due yet: nothing happens.
    await c.running.runDiskBackupsDue(new Date(next.getTime() - 1000));
    expect((await backups(store.id)).items).toHaveLength(manual.length);

    const day = 24 * 3600 * 1000;
    for (let i = 0; i < 3; i++) await c.running.runDiskBackupsDue(new Date(next.getTime() + i * day));
    const list = await backups(store.id);
    const scheduled = list.items.filter((b: any) => b.method === 'scheduled');
    // Three runs, the oldest pruned past retention_count 2; the manual ones are the user's.
    expect(scheduled).toHaveLength(2);
    expect(scheduled.every((b: any) => b.status === 'completed')).toBe(true);
    expect(list.items.filter((b: any) => b.method === 'manual').map((b: any) => b.id)).toEqual(manual);
    expect(list.schedule).toMatchObject({ next_run_at: new Date(next.getTime() + 3 * day).toISOString() });
    expect(await storedBackups(store.id)).toEqual([...manual, ...scheduled.map((b: any) => b.id)].sort());
    await until(
      () => Promise.resolve(seen.filter((e) => e.resource_id === store.id && e.kind === 'service.backup.deleted')),
      (e) => e.length === 1,
      10_000,
    );

    expect((await c.request('DELETE', `${one(store.id)}/backups/schedule`)).status).toBe(204);
    expect(await c.request('DELETE', `${one(store.id)}/backups/schedule`)).toMatchObject({ status: 404, body: { code: 'schedule_not_found' } });
    expect((await backups(store.id)).schedule).toBeNull();
  }, 120_000);

  it('undoes a restore whose archive the store lost: the service keeps its disk and runs again', async () => {
    const replica = await replicaOf(c.vpcId, store.id);
    expect((await shellIn(replica, 'echo kept > /data/note.txt')).code).toBe(0);
    const [lost] = (await backups(store.id)).items;
    await loseArchive(store.id, lost.id);
    const volumesBefore = await volumesOf(store.id);

    const res = await c.post(`${one(store.id)}/backups/restore`, { backup_id: lost.id });
    expect(res.status).toBe(202);
    const done = await until(
      () => backups(store.id),
      (l) => l.restore?.id === res.body.restore.id && l.restore.status !== 'running',
      60_000,
    );
    expect(done.restore).toMatchObject({ status: 'failed', error: expect.stringMatching(/is not in the store.*kept its disk/) });
    expect((await serviceOf(store.id)).status).toBe('running');
    expect((await shellIn(await replicaOf(c.vpcId, store.id), 'cat /data/note.txt')).out).toBe('kept\n');
    expect(await volumesOf(store.id)).toEqual(volumesBefore);
    await until(
      () => Promise.resolve(kinds(store.id)),
      (k) => k.includes('service.backup.restore_failed'),
      10_000,
    );
  }, 120_000);

  it('deleting the service removes its backups from the store', async () => {
    expect((await storedBackups(store.id)).length).toBeGreaterThan(0);
    expect((await c.request('DELETE', one(store.id))).status).toBe(202);
    await until(
      () => serviceOf(store.id),
      (s) => s.status === 'deleted',
      60_000,
    );
    await c.running.runDiskBackupsDue(new Date());
    expect(await storedBackups(store.id)).toEqual([]);
    expect(await sql('select id from compute.disk_backups where service_id = $1', [store.id])).toEqual([]);
    expect(await volumesOf(store.id)).toEqual([]);
  }, 120_000);
});
