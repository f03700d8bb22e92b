// Leases in PostgreSQL (src/leases.ts), as two instances of one service share them: one
// change per resource across instances (tryRun: none while another holds it), one leader
// per loop, handed over when its holder stops (at once) or dies (once its lease expires);
// and the outbox relayed once by two relays. Real PostgreSQL and NATS; the "instances" are objects of this process with holder
// ids of their own, as two pods would be.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { createTestDatabase } from '@pier/testing';
import {
  createDb,
  createLeasesTable,
  createLogger,
  createOutboxTable,
  ensureEventsStream,
  leaderOnly,
  Leases,
  migrate,
  OutboxRelay,
  ResourceLocks,
  writeEvent,
  type Background,
  type Knex,
} from '../src/index.ts';

let db: Knex;
let drop: () => Promise<void>;
const log = createLogger('test', 'error');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  const t = await createTestDatabase(inject('postgresAdminUrl'));
  drop = t.drop;
  db = createDb(t.urls.compute, 'compute');
  await migrate(db, 'compute', [
    { name: '0001_outbox', up: createOutboxTable, down: (k) => k.schema.dropTable('outbox') },
    { name: '0002_leases', up: createLeasesTable, down: (k) => k.schema.dropTable('leases') },
  ]);
});

afterAll(async () => {
  await db?.destroy();
  await drop?.();
});

describe('leases', () => {
  it('one holder at a time; renewed by its holder; free once given back or expired', async () => {
    const a = new Leases(db, 'a@elsewhere:1:aa', 400);
    const b = new Leases(db, 'b@elsewhere:2:bb', 400);
    expect(await a.acquire('x')).toBe(true);
    expect(await b.acquire('x')).toBe(false);
    expect(await a.acquire('x')).toBe(true);
    expect(await b.holderOf('x')).toBe(a.holder);
    await a.release('x');
    expect(await b.acquire('x')).toBe(true);
    // b stops renewing (it died): once expired, a takes it.
    expect(await a.acquire('x')).toBe(false);
    await sleep(500);
    expect(await a.acquire('x')).toBe(true);
  });

  it('a dead process of this host is taken over at once (a restart does not wait out the lifetime)', async () => {
    const here = (await import('node:os')).hostname();
    const local = new Leases(db, `svc@${here}:${process.pid}:ee`, 60_000);
    expect(await new Leases(db, `svc@${here}:999999:dd`, 60_000).acquire('y')).toBe(true);
    expect(await local.acquire('y')).toBe(true);
    // Another host's holder is never judged dead from here: it waits out its lifetime.
    expect(await new Leases(db, 'svc@elsewhere:3:cc', 60_000).acquire('z')).toBe(true);
    expect(await local.acquire('z')).toBe(false);
  });
});

describe('resource locks across instances', () => {
  it('run one change per key at a time across two instances, and changes of other keys at once', async () => {
    const one = new ResourceLocks(new Leases(db, 'one@elsewhere:1:01', 2000), log);
    const two = new ResourceLocks(new Leases(db, 'two@elsewhere:2:02', 2000), log);
    const events: string[] = [];
    const change = (who: string, ms: number) => async () => {
      events.push(`${who} start`);
      await sleep(ms);
      events.push(`${who} end`);
    };
    const started = Date.now();
    await Promise.all([one.run('svc-1', change('one', 300)), two.run('svc-1', change('two', 300)), two.run('svc-2', change('other', 300))]);
    // The two changes of svc-1 never overlap; svc-2's ran beside them.
    const s1 = events.filter((e) => !e.startsWith('other'));
    expect([s1[0]!.split(' ')[1], s1[1]!.split(' ')[1]]).toEqual(['start', 'end']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(Number((await db('leases').where('name', 'like', 'lock:%').count({ n: '*' }))[0]!.n)).toBe(0);
  });

  it('a change outlasting the lifetime keeps its lock (renewed); a dead holder’s lock frees at expiry', async () => {
    const one = new ResourceLocks(new Leases(db, 'one@elsewhere:1:03', 300), log);
    const two = new ResourceLocks(new Leases(db, 'two@elsewhere:2:04', 300), log);
    let overlapped = false;
    let inside = 0;
    const change = async () => {
      inside++;
      if (inside > 1) overlapped = true;
      await sleep(700);
      inside--;
    };
    await Promise.all([one.run('long', change), sleep(50).then(() => two.run('long', change))]);
    expect(overlapped).toBe(false);
    // A holder that died mid-change (its lease written, never given back).
    await new Leases(db, 'gone@elsewhere:9:05', 300).acquire('lock:stale');
    const t0 = Date.now();
    await two.run('stale', async () => undefined);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
  });

  it('tryRun runs only what no instance holds now, and holds it meanwhile', async () => {
    const one = new ResourceLocks(new Leases(db, 'one@elsewhere:1:06', 2000), log);
    const two = new ResourceLocks(new Leases(db, 'two@elsewhere:2:07', 2000), log);
    let release!: () => void;
    const held = one.tryRun('job', () => new Promise<string>((r) => (release = () => r('done'))));
    await sleep(100);
    // Held by the other instance, and by this process's own run: neither runs it again.
    expect(await two.tryRun('job', async () => 'twice')).toEqual({ ran: false });
    expect(await one.tryRun('job', async () => 'twice')).toEqual({ ran: false });
    release();
    expect(await held).toEqual({ ran: true, value: 'done' });
    // Given back: the other takes it.
    expect(await two.tryRun('job', async () => 'next')).toEqual({ ran: true, value: 'next' });
    expect(Number((await db('leases').where('name', 'like', 'lock:%').count({ n: '*' }))[0]!.n)).toBe(0);
  });
});

describe('leader election', () => {
  /** A background loop that counts the passes it makes while started. */
  function loop(): Background & { passes: number; running: boolean } {
    let timer: NodeJS.Timeout | undefined;
    const l = {
      passes: 0,
      running: false,
      start() {
        l.running = true;
        timer = setInterval(() => l.passes++, 20);
      },
      async stop() {
        l.running = false;
        clearInterval(timer);
      },
    };
    return l;
  }

  it('runs the loop in one instance; hands over at once on stop, and within the lifetime when the leader dies', async () => {
    const ttl = 600;
    const a = loop();
    const b = loop();
    const la = leaderOnly(new Leases(db, 'a@elsewhere:1:0a', ttl), 'reconciler', a, log);
    const lb = leaderOnly(new Leases(db, 'b@elsewhere:2:0b', ttl), 'reconciler', b, log);
    la.start();
    await la.recovered!();
    lb.start();
    await lb.recovered!();
    expect([a.running, b.running]).toEqual([true, false]);
    await sleep(300);
    expect(b.passes).toBe(0);

    // A clean stop gives the lease back: b leads at its next try (a third of the lifetime).
    let t0 = Date.now();
    await la.stop();
    while (!b.running) await sleep(10);
    expect(Date.now() - t0).toBeLessThan(ttl);
    expect(a.running).toBe(false);

    await lb.stop();

    // A leader that died: its lease written, never renewed nor given back. Another instance
    // takes over once it expires, not before.
    await new Leases(db, 'dead@elsewhere:7:0d', ttl).acquire('leader:scheduler');
    const c = loop();
    const lc = leaderOnly(new Leases(db, 'c@elsewhere:3:0c', ttl), 'scheduler', c, log);
    t0 = Date.now();
    lc.start();
    await lc.recovered!();
    expect(c.running).toBe(false);
    while (!c.running) await sleep(10);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(ttl * 0.8);
    expect(took).toBeLessThan(ttl + ttl / 3 + 500);
    await lc.stop();
  });
});

describe('outbox relay with two instances', () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: inject('natsUrl') });
    await ensureEventsStream(nc);
  });
  afterAll(async () => {
    await nc?.close();
  });

  it('publishes each event once: the two relays claim disjoint batches', async () => {
    const workspaceId = randomUUID();
    const seen: string[] = [];
    const sub = nc.subscribe(`pier.events.${workspaceId}.>`);
    void (async () => {
      for await (const m of sub) seen.push(m.json<{ resource_id: string }>().resource_id);
    })();
    const ids = Array.from({ length: 300 }, () => randomUUID());
    for (const id of ids) await writeEvent(db, { kind: 'service.created', workspaceId, vpcId: null, resourceId: id, data: {} });
    const opts = { retentionSeconds: 3600, publishBatch: 10, trimBatch: 100 };
    const r1 = new OutboxRelay(db, 'leases-test-1', inject('natsUrl'), log, opts);
    const r2 = new OutboxRelay(db, 'leases-test-2', inject('natsUrl'), log, opts);
    // Different sources: JetStream's de-duplication cannot hide a double publish here.
    const [n1, n2] = await Promise.all([r1.pass(), r2.pass()]);
    expect(n1 + n2).toBe(300);
    const end = Date.now() + 5000;
    while (seen.length < 300 && Date.now() < end) await sleep(20);
    await sleep(200);
    expect(seen.length).toBe(300);
    expect(new Set(seen).size).toBe(300);
    await r1.stop();
    await r2.stop();
    sub.unsubscribe();
  });
});
