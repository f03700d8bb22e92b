import { access } from 'node:fs/promises';
import path from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER } from '@pier/kit';
import { DockerSecretStore } from '../src/cluster/docker.ts';
import { adminQuery, secretRows, startSecrets, type Harness } from './support.ts';

// A crash between our record and the store leaves a record `creating` or `deleting`.
// These rows are made by hand, as a crash at each step would leave them, then the service
// restarts and its start-up reconcile must settle every one.

describe('crash reconciliation', () => {
  let h: Harness;
  let store: DockerSecretStore;
  const exists = (id: string) =>
    access(path.join(h.storeDir, `vpc-${h.vpcId}`, `${id}.secret`)).then(
      () => true,
      () => false,
    );
  const leaveRow = async (name: string, state: 'creating' | 'deleting', ageSeconds: number) => {
    const [row] = await adminQuery<{ id: string }>(
      h.db.adminUrl,
      `insert into secrets.secrets (workspace_id, vpc_id, name, keys, state, created_at, updated_at)
       values ($1, $2, $3, '{K}', $4, now() - make_interval(secs => $5), now() - make_interval(secs => $5)) returning id`,
      [h.workspaceId, h.vpcId, name, state, ageSeconds],
    );
    return row!.id;
  };
  const put = (id: string, name: string) => store.apply({ workspaceId: h.workspaceId, vpcId: h.vpcId, secretId: id, name }, { K: 'v' });

  beforeAll(async () => {
    h = await startSecrets();
    store = new DockerSecretStore(h.storeDir, h.env.PIER_SECRETS_STORE_KEY!);
  });
  afterAll(() => h?.stop());

  it('undoes abandoned creates, finishes abandoned deletes, sweeps orphans, and leaves in-flight work alone', async () => {
    const live = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .send({ name: 'live', values: { K: 'v' } });
    expect(live.status).toBe(201);

    // Crashed after the store write, before marking ready.
    const createdThenCrashed = await leaveRow('created-then-crashed', 'creating', 600);
    await put(createdThenCrashed, 'created-then-crashed');
    // Crashed before the store write.
    const crashedBeforeWrite = await leaveRow('crashed-before-write', 'creating', 600);
    // Marked deleting, crashed before the store delete.
    const deletingWithValues = await leaveRow('deleting-with-values', 'deleting', 600);
    await put(deletingWithValues, 'deleting-with-values');
    // Store delete done, crashed before the record delete.
    const deletingWithout = await leaveRow('deleting-without', 'deleting', 600);
    // A store object no record accounts for.
    const orphan = crypto.randomUUID();
    await put(orphan, 'orphan');
    // A create still in flight (seconds old): not the reconciler's to touch.
    const inFlight = await leaveRow('in-flight', 'creating', 1);
    await put(inFlight, 'in-flight');

    // Pending records are invisible to the API.
    const viewer = await h.token('viewer');
    const list = await request(h.url).get(h.base).set(IDENTITY_HEADER, viewer);
    expect(list.body.items.map((i: { name: string }) => i.name)).toEqual(['live']);
    for (const id of [createdThenCrashed, deletingWithValues, inFlight]) {
      expect((await request(h.url).get(`${h.base}/${id}`).set(IDENTITY_HEADER, viewer)).status).toBe(404);
      expect(
        (
          await request(h.url)
            .delete(`${h.base}/${id}`)
            .set(IDENTITY_HEADER, await h.token('admin'))
        ).status,
      ).toBe(404);
    }
    // A pending record still holds its name.
    const taken = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .send({ name: 'in-flight', values: { K: 'v' } });
    expect(taken.status).toBe(409);

    await h.restart();
    const report = await h.running.reconcile(); // joins the start-up pass
    expect(report).toBeDefined();

    const rows = await secretRows(h.db.adminUrl);
    // Rows come in created_at order, and the left-behind ones were backdated.
    expect(rows.map((r) => [r.name, r.state])).toEqual([
      ['in-flight', 'creating'],
      ['live', 'ready'],
    ]);
    for (const id of [createdThenCrashed, crashedBeforeWrite, deletingWithValues, deletingWithout, orphan]) expect(await exists(id)).toBe(false);
    expect(await exists(live.body.id)).toBe(true);
    expect(await exists(inFlight)).toBe(true);

    // Finished deletes announce themselves; undone creates never announced anything.
    const outbox = await adminQuery<{ kind: string; id: string }>(h.db.adminUrl, `select kind, payload->>'resource_id' as id from secrets.outbox order by id`);
    expect(outbox).toHaveLength(3);
    expect(outbox).toEqual(
      expect.arrayContaining([
        { kind: 'secret.created', id: live.body.id },
        { kind: 'secret.deleted', id: deletingWithValues },
        { kind: 'secret.deleted', id: deletingWithout },
      ]),
    );
    expect(h.logs.text).toContain('reconciled secrets left pending');
  });

  it('retries while the store is unreachable, then settles', async () => {
    const stuck = await leaveRow('stuck-deleting', 'deleting', 600);
    await put(stuck, 'stuck-deleting');
    const { rename, writeFile, rm } = await import('node:fs/promises');
    const moved = `${h.storeDir}.away`;
    await rename(h.storeDir, moved);
    await writeFile(h.storeDir, 'unavailable');
    try {
      await h.running.reconcile();
      expect((await secretRows(h.db.adminUrl)).find((r) => r.id === stuck)?.state).toBe('deleting');
    } finally {
      await rm(h.storeDir);
      await rename(moved, h.storeDir);
    }
    await h.running.reconcile();
    expect((await secretRows(h.db.adminUrl)).find((r) => r.id === stuck)).toBeUndefined();
    expect(await exists(stuck)).toBe(false);
  });
});
