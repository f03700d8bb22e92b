// The outbox's promise, through a real service: NATS down while 1,000 writes are made;
// every write succeeds, and once NATS returns every event arrives exactly once, in the
// order of the writes for each secret name. NATS sits behind a link the test cuts; the
// events are read straight from the suite's NATS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infra, readyz as readyzOf, sampleValue, scrape, socketLink, until } from '@pier/testing';
import { adminQuery, collectEvents, startSecrets, type Harness } from './support.ts';

const NAMES = 50;
/** Writes per name: a create and a delete, ten times over (each create is a new secret id). */
const WRITES_PER_NAME = 20;
const WRITES = NAMES * WRITES_PER_NAME;

let h: Harness;
let events: Awaited<ReturnType<typeof collectEvents>>;
const natsUrl = new URL(infra().natsUrl);
const nats = socketLink({ host: natsUrl.hostname, port: Number(natsUrl.port) });
const readyz = () => readyzOf(h.url);
const backlog = async () => sampleValue(await scrape(h.url), 'pier_outbox_backlog_rows');

beforeAll(async () => {
  await nats.up();
  // Small publish batches, so a cut during the drain lands between and inside batches.
  h = await startSecrets({ PIER_NATS_URL: `nats://${nats.address}`, PIER_LOG_LEVEL: 'warn', PIER_OUTBOX_PUBLISH_BATCH: '100' });
  events = await collectEvents(infra().natsUrl, h.workspaceId, h.vpcId);
});

afterAll(async () => {
  await events?.close();
  await h?.stop();
  await nats.down();
});

/** Events received for the names starting with `prefix`, as `kind id` per name, in arrival order. */
function received(prefix: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const e of events.events) {
    const name = e.payload.data.name as string;
    if (name.startsWith(prefix)) seen.set(name, [...(seen.get(name) ?? []), `${e.payload.kind} ${e.payload.resource_id}`]);
  }
  return seen;
}
const receivedCount = (prefix: string) => [...received(prefix).values()].reduce((a, s) => a + s.length, 0);

/**
 * Takes NATS away and makes the writes: one chain per name, all names at once, so writes
 * of different secrets interleave in the outbox while those of one name follow each other.
 * Returns, per name, the events its writes must produce, in the order they were made.
 */
async function writeWhileNatsIsDown(prefix: string): Promise<{ expected: Map<string, string[]>; writesMs: number }> {
  expect((await until(readyz, (r) => r.status === 200, 30_000)).body.checks.nats).toEqual({ ok: true });
  await nats.down();
  const down = await until(readyz, (r) => r.status === 503, 20_000);
  expect(down.body.checks.nats!.ok).toBe(false);
  expect(down.body.checks.database).toEqual({ ok: true });

  const expected = new Map<string, string[]>();
  const statuses: number[] = [];
  const started = Date.now();
  await Promise.all(
    Array.from({ length: NAMES }, async (_, n) => {
      const name = `${prefix}-${n}`;
      const sequence: string[] = [];
      expected.set(name, sequence);
      for (let w = 0; w < WRITES_PER_NAME / 2; w++) {
        const created = await h.request('POST', h.base, { name, values: { K: `v${w}` } });
        statuses.push(created.status);
        if (created.status !== 201) throw new Error(`create of ${name} answered ${created.status}: ${JSON.stringify(created.body)}`);
        sequence.push(`secret.created ${created.body.id}`);
        const deleted = await h.request('DELETE', `${h.base}/${created.body.id}`);
        statuses.push(deleted.status);
        if (deleted.status !== 204) throw new Error(`delete of ${name} answered ${deleted.status}`);
        sequence.push(`secret.deleted ${created.body.id}`);
      }
    }),
  );
  const writesMs = Date.now() - started;
  expect(statuses).toHaveLength(WRITES);
  expect(statuses.every((s) => s >= 200 && s < 300)).toBe(true);
  // Nothing left while the link was down: every event waits in the outbox.
  expect(await backlog()).toBe(WRITES);
  expect(receivedCount(prefix)).toBe(0);
  expect((await readyz()).body.checks.nats!.ok).toBe(false);
  return { expected, writesMs };
}

/** Waits (60 s at most) for every event of `prefix`, then checks each came once, in its name's order. */
async function expectDelivered(prefix: string, expected: Map<string, string[]>): Promise<void> {
  await until(
    () => Promise.resolve(receivedCount(prefix)),
    (n) => n >= WRITES,
    60_000,
    20,
  );
  await until(backlog, (rows) => rows === 0, 10_000);
  // A late duplicate would land after the count was reached: give it time to show up.
  await new Promise((r) => setTimeout(r, 1500));
  const seen = received(prefix);
  expect(receivedCount(prefix)).toBe(WRITES);
  expect(seen.size).toBe(NAMES);
  for (const [name, sequence] of expected) expect(seen.get(name), name).toEqual(sequence);
  expect((await until(readyz, (r) => r.status === 200, 30_000)).body.checks.nats).toEqual({ ok: true });
}

describe('secrets through a NATS outage', () => {
  it('answers 1,000 writes while NATS is down, then delivers every event once, in order per secret', async () => {
    let written: Awaited<ReturnType<typeof writeWhileNatsIsDown>>;
    try {
      written = await writeWhileNatsIsDown('outage');
    } finally {
      await nats.up();
    }
    const back = Date.now();
    await until(
      () => Promise.resolve(receivedCount('outage')),
      (n) => n >= WRITES,
      60_000,
      20,
    );
    const drainMs = Date.now() - back;
    console.log(
      `NATS outage: ${WRITES} writes answered in ${written.writesMs} ms with NATS down; all ${WRITES} events delivered ${drainMs} ms after it returned`,
    );
    await expectDelivered('outage', written.expected);
  }, 180_000);

  it('still delivers each event once, in order, when NATS drops again in the middle of the drain', async () => {
    let written: Awaited<ReturnType<typeof writeWhileNatsIsDown>>;
    try {
      written = await writeWhileNatsIsDown('flap');
    } finally {
      await nats.up();
    }
    // Cut again as soon as 150 events are through, in the middle of a publish batch (of
    // 100): the relay's publish in flight fails, it marks the part of the batch JetStream
    // acknowledged, reconnects and goes on from the first row not marked.
    let atCut: number;
    try {
      await until(
        () => Promise.resolve(receivedCount('flap')),
        (n) => n >= 150,
        60_000,
        1,
      );
      await nats.down();
      atCut = receivedCount('flap');
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await nats.up();
    }
    console.log(`NATS flap: cut after ${atCut} of ${WRITES} events had arrived`);
    expect(atCut).toBeLessThan(WRITES); // the cut did land in the middle of the drain
    await expectDelivered('flap', written.expected);
  }, 180_000);

  it('drops the republished events as duplicates when the relay lost its marks (a crash between publish and mark)', async () => {
    // What a relay that died after JetStream acknowledged its publishes, before its UPDATE,
    // leaves behind: the rows of both outages above published but not marked.
    const unmarked = await adminQuery(h.db.adminUrl, 'update secrets.outbox set published_at = null where published_at is not null returning id');
    expect(unmarked).toHaveLength(2 * WRITES);
    await until(backlog, (rows) => rows === 0, 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(receivedCount('outage')).toBe(WRITES);
    expect(receivedCount('flap')).toBe(WRITES);
  }, 120_000);
});
