import { describe, it, expect, beforeAll, afterAll, inject } from 'vitest';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { createDb, migrate, createOutboxTable, writeEvent, OutboxRelay, ensureEventsStream, createLogger, type Knex } from '../src/index.ts';
import { createTestDatabase, socketLink } from '@pier/testing';

async function until(check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('condition not met in time');
}

describe('outbox relay', () => {
  let db: Knex;
  let nc: NatsConnection;
  let drop: () => Promise<void>;
  const workspaceId = randomUUID();
  const received: { subject: string; kind: string; resource: string }[] = [];

  beforeAll(async () => {
    const t = await createTestDatabase(inject('postgresAdminUrl'));
    drop = t.drop;
    db = createDb(t.urls.compute, 'compute');
    await migrate(db, 'compute', [{ name: '0001_outbox', up: createOutboxTable, down: (k) => k.schema.dropTable('outbox') }]);
    nc = await connect({ servers: inject('natsUrl') });
    await ensureEventsStream(nc);
    // A plain subscription sees what reaches the stream's subjects; the relay itself only
    // marks a row published once JetStream has acknowledged storing it.
    const sub = nc.subscribe(`pier.events.${workspaceId}.>`);
    void (async () => {
      for await (const m of sub) {
        const body = m.json<{ kind: string; resource_id: string }>();
        received.push({ subject: m.subject, kind: body.kind, resource: body.resource_id });
      }
    })();
  });

  afterAll(async () => {
    await nc?.close();
    await db?.destroy();
    await drop?.();
  });

  it('publishes committed events on their subject and marks them published', async () => {
    const relay = new OutboxRelay(db, 'kittest', inject('natsUrl'), createLogger('test', 'silent'), 50);
    relay.start();
    await db.transaction((trx) => writeEvent(trx, { kind: 'thing.created', workspaceId, vpcId: null, resourceId: 'r1', data: { a: 1 } }));
    // A rolled-back transaction leaves no event behind.
    await db
      .transaction(async (trx) => {
        await writeEvent(trx, { kind: 'thing.created', workspaceId, resourceId: 'never', data: {} });
        throw new Error('rollback');
      })
      .catch(() => undefined);
    relay.poke();
    await until(() => received.some((r) => r.resource === 'r1'));
    expect(received.find((r) => r.resource === 'r1')!.subject).toBe(`pier.events.${workspaceId}._.thing_created.r1`);
    await until(async () => (await db('outbox').whereNull('published_at').count<{ count: number }[]>())[0]!.count === 0);
    await relay.stop();
    expect(received.some((r) => r.resource === 'never')).toBe(false);
  });

  it('holds events through a broker outage and delivers each once, in order, when it returns', async () => {
    // A relay in front of the real NATS server, so the test can take the broker away and back.
    const nats = new URL(inject('natsUrl'));
    const link = socketLink({ host: nats.hostname, port: Number(nats.port) });
    await link.up();
    const relay = new OutboxRelay(db, 'kittest', `nats://${link.address}`, createLogger('test', 'silent'), 50);
    relay.start();
    await link.down();
    for (const id of ['o1', 'o2', 'o3']) {
      await writeEvent(db, { kind: 'thing.updated', workspaceId, resourceId: id, data: {} });
    }
    await new Promise((r) => setTimeout(r, 1000));
    const pending = await db('outbox').whereNull('published_at').pluck('payload');
    expect(pending.map((p: { resource_id: string }) => p.resource_id)).toEqual(['o1', 'o2', 'o3']);
    expect(received.filter((r) => r.resource.startsWith('o'))).toEqual([]);
    await link.up();
    await until(() => received.filter((r) => r.resource.startsWith('o')).length >= 3, 30_000);
    await until(async () => (await db('outbox').whereNull('published_at').count<{ count: number }[]>())[0]!.count === 0);
    await new Promise((r) => setTimeout(r, 300));
    expect(received.filter((r) => r.resource.startsWith('o')).map((r) => r.resource)).toEqual(['o1', 'o2', 'o3']);
    await relay.stop();
    await link.down();
  });
});
