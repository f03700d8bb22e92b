// Live log lines between instances of compute: the feed subscribes to a service's batches
// from the other instances while someone here follows it (a fake fanout shows when), and
// the NATS fanout carries batches between two instances on the suite's NATS, whole and in
// order even past the broker's largest message, never back to the instance that sent them.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '@pier/kit';
import { infra, until } from '@pier/testing';
import { LogFeed, type LogFanout } from '../src/domain/logs/log-feed.ts';
import type { LogLine } from '../src/domain/logs/log-port.ts';
import { timestampOf } from '../src/domain/logs/log-time.ts';
import { NatsLogFanout } from '../src/clients/nats-log-fanout.ts';

const line = (n: number, replica = '0', message = `line ${n}`): LogLine => ({
  ts: timestampOf(new Date(1_700_000_000_000 + n)),
  replica,
  deploymentId: null,
  stream: 'stdout',
  message,
});
const never = new AbortController().signal;

class FakeFanout implements LogFanout {
  sent: { serviceId: string; lines: LogLine[] }[] = [];
  open = new Map<string, (key: string, lines: LogLine[]) => void>();
  receives = 0;
  release!: () => void;

  send(serviceId: string, _key: string, lines: LogLine[]): void {
    this.sent.push({ serviceId, lines });
  }

  receive(serviceId: string, deliver: (key: string, lines: LogLine[]) => void) {
    this.receives++;
    this.open.set(serviceId, deliver);
    const ready = new Promise<void>((resolve) => (this.release = resolve));
    return { ready, close: () => this.open.delete(serviceId) };
  }
}

describe('the feed with other instances', () => {
  it('subscribes with the first follower of a service (ready first), once, and lets go with the last', async () => {
    const fanout = new FakeFanout();
    const feed = new LogFeed(fanout);
    let subscribed = false;
    const first = feed.subscribe('s').then((sub) => ((subscribed = true), sub));
    await new Promise((r) => setTimeout(r, 20));
    // Not before the subscription is in place: a line read before it would be missed.
    expect(subscribed).toBe(false);
    fanout.release();
    const a = await first;
    const bPromise = feed.subscribe('s', '1');
    const b = await bPromise;
    expect(fanout.receives).toBe(1);

    // Another instance's batch reaches both followers (b only its replica's line).
    fanout.open.get('s')!('k', [line(1, '0'), line(2, '1')]);
    expect((await a.next(never))!.lines.map((l) => l.line.message)).toEqual(['line 1', 'line 2']);
    expect((await b.next(never))!.lines.map((l) => l.line.message)).toEqual(['line 2']);
    // A batch collected here goes to the followers here and to the other instances.
    feed.publish('s', 'k', [line(3)]);
    expect((await a.next(never))!.lines.map((l) => l.line.message)).toEqual(['line 3']);
    expect(fanout.sent).toEqual([{ serviceId: 's', lines: [line(3)] }]);

    a.close();
    expect(fanout.open.has('s')).toBe(true);
    b.close();
    expect(fanout.open.has('s')).toBe(false);
    // Followed again: subscribed again.
    const again = feed.subscribe('s');
    fanout.release();
    (await again).close();
    expect(fanout.receives).toBe(2);
  });
});

describe('the NATS fanout', () => {
  const log = createLogger('compute', 'silent');
  const one = new NatsLogFanout(infra().natsUrl, `one-${randomUUID()}`, log);
  const two = new NatsLogFanout(infra().natsUrl, `two-${randomUUID()}`, log);
  one.start();
  two.start();
  afterAll(() => Promise.all([one.stop(), two.stop()]));

  it('carries a batch to the instance that follows the service, split past the largest message, and not back', async () => {
    const serviceId = randomUUID();
    const atOne: LogLine[] = [];
    const atTwo: LogLine[] = [];
    // Connected (the link connects in the background).
    await until(
      async () => one.connected && two.connected,
      (up) => up,
      10_000,
      50,
    );
    const r1 = one.receive(serviceId, (_key, lines) => atOne.push(...lines));
    const r2 = two.receive(serviceId, (_key, lines) => atTwo.push(...lines));
    await Promise.all([r1.ready, r2.ready]);
    // Three megabytes: three messages at least on a broker taking one.
    const big = Array.from({ length: 3000 }, (_, i) => line(i, '0', `${i} ${'x'.repeat(1000)}`));
    one.send(serviceId, 'k', big);
    await until(
      async () => atTwo.length,
      (n) => n >= big.length,
      10_000,
      50,
    );
    expect(atTwo.map((l) => l.message)).toEqual(big.map((l) => l.message));
    // One's own batch is not delivered to it again (it delivered it itself).
    await new Promise((r) => setTimeout(r, 200));
    expect(atOne).toEqual([]);
    // Closed: no more.
    r2.close();
    one.send(serviceId, 'k', [line(1)]);
    await new Promise((r) => setTimeout(r, 200));
    expect(atTwo).toHaveLength(big.length);
    r1.close();
  });

  it('cuts a line too long for a message alone, rather than losing the batch', async () => {
    const serviceId = randomUUID();
    const got: LogLine[] = [];
    const r = two.receive(serviceId, (_key, lines) => got.push(...lines));
    await r.ready;
    // Control characters take six bytes each in JSON: 256 KiB of them would not fit in one MiB.
    one.send(serviceId, 'k', [line(1, '0', '\u0001'.repeat(256 * 1024)), line(2)]);
    await until(
      async () => got.length,
      (n) => n >= 2,
      10_000,
      50,
    );
    expect(got[0]!.message.length).toBeLessThan(256 * 1024);
    expect(got[1]!.message).toBe('line 2');
    r.close();
  });
});
