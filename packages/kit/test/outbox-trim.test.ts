// The outbox stays bounded: published rows older than the retention are deleted in
// batches, and a publish batch is marked with one UPDATE. Real PostgreSQL and NATS.
import { describe, it, expect, beforeAll, afterAll, inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { createDb, migrate, createOutboxTable, OutboxRelay, createLogger, eventSubject, loadConfig, serviceEnv, type Knex } from '../src/index.ts';
import { createTestDatabase, LogCapture, until } from '@pier/testing';

const count = async (db: Knex, where: (q: Knex.QueryBuilder) => unknown = () => undefined): Promise<number> => {
  const q = db('outbox');
  where(q);
  return Number((await q.count<{ count: number }[]>('* as count'))[0]!.count);
};

/** `n` outbox rows of workspace `ws`, inserted in one transaction (5000 per INSERT). */
async function writeEvents(db: Knex, ws: string, n: number, extra: Record<string, unknown> = {}): Promise<void> {
  await db.transaction(async (trx) => {
    for (let from = 0; from < n; from += 5000) {
      const rows = [];
      for (let i = from; i < Math.min(n, from + 5000); i++) {
        const event = { kind: 'thing.updated', workspaceId: ws, resourceId: `r${i}`, data: { i } };
        rows.push({
          subject: eventSubject(event),
          kind: event.kind,
          payload: { kind: event.kind, workspace_id: ws, vpc_id: null, resource_id: event.resourceId, data: event.data, occurred_at: new Date().toISOString() },
          ...extra,
        });
      }
      await trx('outbox').insert(rows);
    }
  });
}

describe('outbox trimming and batched marks', () => {
  let db: Knex;
  let nc: NatsConnection;
  let drop: () => Promise<void>;
  const statements: string[] = [];
  /** Rows each DELETE statement removed. */
  const deleteSizes: number[] = [];

  beforeAll(async () => {
    const t = await createTestDatabase(inject('postgresAdminUrl'));
    drop = t.drop;
    db = createDb(t.urls.compute, 'compute');
    await migrate(db, 'compute', [{ name: '0001_outbox', up: createOutboxTable, down: (k) => k.schema.dropTable('outbox') }]);
    db.on('query', (q: { sql: string }) => statements.push(q.sql));
    db.on('query-response', (response: unknown, q: { sql: string }) => {
      if (/^delete from "outbox"/i.test(q.sql)) deleteSizes.push(Number(response));
    });
    nc = await connect({ servers: inject('natsUrl') });
  });

  afterAll(async () => {
    await nc?.close();
    await db?.destroy();
    await drop?.();
  });

  it('stays bounded while 100k events go through, one UPDATE per publish batch and at most 5000 rows per DELETE', async () => {
    const ws = randomUUID();
    let received = 0;
    const sub = nc.subscribe(`pier.events.${ws}.>`);
    void (async () => {
      for await (const _ of sub) received++;
    })();
    await nc.flush();
    const logs = new LogCapture();
    const relay = new OutboxRelay(db, 'kittrim', inject('natsUrl'), createLogger('test', 'debug', logs), {
      intervalMs: 50,
      publishBatch: 500,
      retentionSeconds: 1,
      trimBatch: 5000,
      trimEveryMs: 200,
    });
    statements.length = 0;
    deleteSizes.length = 0;
    relay.start();
    const sizes: number[] = [];
    // The table's size, sampled all along (not only between waves).
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await count(db));
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const waves = 10;
    const perWave = 10_000;
    for (let w = 0; w < waves; w++) {
      await writeEvents(db, ws, perWave);
      relay.poke();
      await until(
        () => count(db, (q) => q.whereNull('published_at')),
        (n) => n === 0,
        120_000,
        100,
      );
      sizes.push(await count(db));
    }
    await until(
      () => Promise.resolve(received),
      (n) => n >= waves * perWave,
      30_000,
      100,
    );
    // Everything published ages out: the table empties with no new events.
    await until(
      () => count(db),
      (n) => n === 0,
      30_000,
      200,
    );
    sampling = false;
    await sampler;
    await relay.stop();
    sub.unsubscribe();

    const updates = statements.filter((s) => /^update "outbox"/i.test(s)).length;
    const deletes = statements.filter((s) => /^delete from "outbox"/i.test(s)).length;
    const trims = logs.text
      .split('\n')
      .filter((l) => l.includes('outbox trimmed'))
      .map((l) => JSON.parse(l) as { deleted: number; batches: number });
    const deleted = trims.reduce((a, t) => a + t.deleted, 0);
    const batches = trims.reduce((a, t) => a + t.batches, 0);
    console.log(
      `outbox: ${waves * perWave} events; rows after each wave ${sizes.join(', ')}, peak ${peak}; ${updates} UPDATEs; ${deletes} DELETEs deleting ${deleted} rows in ${batches} batches`,
    );

    expect(received).toBe(waves * perWave);
    expect(updates).toBe((waves * perWave) / 500); // one per batch of 500, never one per row
    expect(peak).toBeLessThan((waves * perWave) / 2); // never more than a few waves' worth
    expect(Math.max(...deleteSizes)).toBeLessThanOrEqual(5000); // no DELETE took more than a batch
    expect(deleteSizes.reduce((a, n) => a + n, 0)).toBe(waves * perWave);
    expect(sizes.filter((s) => s < 3 * perWave).length).toBeGreaterThan(waves / 2);
    expect(deleted).toBe(waves * perWave);
    expect(Math.ceil(deleted / 5000)).toBeLessThanOrEqual(batches); // no DELETE took more than 5000 rows
    expect(deletes).toBeGreaterThanOrEqual(batches);
  }, 300_000);

  it('trims only published rows older than the retention, in batches of the configured size', async () => {
    const ws = randomUUID();
    await db('outbox').delete();
    await writeEvents(db, ws, 12_000, { created_at: db.raw("now() - interval '3 hours'"), published_at: db.raw("now() - interval '2 hours'") });
    await writeEvents(db, ws, 3000, { created_at: db.raw("now() - interval '3 hours'"), published_at: db.raw('now()') });
    await writeEvents(db, ws, 2000, { created_at: db.raw("now() - interval '3 hours'") });
    const relay = new OutboxRelay(db, 'kittrim', inject('natsUrl'), createLogger('test', 'silent'), { retentionSeconds: 3600, trimBatch: 5000 });
    statements.length = 0;
    expect(await relay.trim()).toEqual({ deleted: 12_000, batches: 3 });
    expect(statements.filter((s) => /^delete from "outbox"/i.test(s))).toHaveLength(3);
    expect(await count(db)).toBe(5000);
    expect(await count(db, (q) => q.whereNull('published_at'))).toBe(2000); // unpublished rows are never trimmed, however old
    expect(await relay.trim()).toEqual({ deleted: 0, batches: 0 });
    // A bounded trim stops after its batches: the relay's background trim publishes in between.
    await writeEvents(db, ws, 6000, { published_at: db.raw("now() - interval '2 hours'") });
    expect(await relay.trim(1)).toEqual({ deleted: 5000, batches: 1 });
    expect(await relay.trim(1)).toEqual({ deleted: 1000, batches: 1 });
    await relay.stop();
  });

  it('reads its settings from every service environment, with defaults', () => {
    const base = { PIER_DATABASE_URL: 'postgres://u:p@h/d', PIER_NATS_URL: 'nats://h:4222', PIER_IDENTITY_PUBLIC_KEY: '{}' };
    expect(loadConfig(serviceEnv, base)).toMatchObject({ PIER_OUTBOX_RETENTION_SECONDS: 3600, PIER_OUTBOX_PUBLISH_BATCH: 500, PIER_OUTBOX_TRIM_BATCH: 5000 });
    expect(loadConfig(serviceEnv, { ...base, PIER_OUTBOX_RETENTION_SECONDS: '60', PIER_OUTBOX_TRIM_BATCH: '1000' })).toMatchObject({
      PIER_OUTBOX_RETENTION_SECONDS: 60,
      PIER_OUTBOX_TRIM_BATCH: 1000,
    });
    expect(() => loadConfig(serviceEnv, { ...base, PIER_OUTBOX_RETENTION_SECONDS: 'an hour' })).toThrow(/PIER_OUTBOX_RETENTION_SECONDS/);
    expect(() => loadConfig(serviceEnv, { ...base, PIER_OUTBOX_TRIM_BATCH: '0' })).toThrow(/PIER_OUTBOX_TRIM_BATCH/);
  });
});
