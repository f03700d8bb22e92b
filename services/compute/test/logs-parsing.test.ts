// The pure parts of logs: timestamps, query times, Docker's frames and split lines, the
// Kubernetes text stream, and the follower queue that drops when a client falls behind.
import { describe, expect, it } from 'vitest';
import { normalizeTimestamp, microsOf, timestampOf } from '../src/domain/logs/log-time.ts';
import { parseInstant } from '../src/domain/logs/log-query.ts';
import { LogFeed, MAX_QUEUED_LINES } from '../src/domain/logs/log-feed.ts';
import { DockerDemuxer, EntrySplitter, LineAssembler, MAX_LINE_BYTES } from '../src/cluster/log-lines.ts';
import { dockerSince } from '../src/cluster/docker-logs.ts';
import type { LogLine } from '../src/domain/logs/log-port.ts';

const labels = { replica: '0', deploymentId: null };

function frame(type: 1 | 2, text: string | Buffer): Buffer {
  const payload = typeof text === 'string' ? Buffer.from(text) : text;
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('timestamps', () => {
  it('come to one fixed-width UTC form whatever their fraction and zone', () => {
    expect(normalizeTimestamp('2025-05-01T12:00:00.123456789Z')).toBe('2025-05-01T12:00:00.123456789Z');
    expect(normalizeTimestamp('2025-05-01T12:00:00.12Z')).toBe('2025-05-01T12:00:00.120000000Z');
    expect(normalizeTimestamp('2025-05-01T12:00:00Z')).toBe('2025-05-01T12:00:00.000000000Z');
    expect(normalizeTimestamp('2025-05-01T14:00:00.5+02:00')).toBe('2025-05-01T12:00:00.500000000Z');
    expect(normalizeTimestamp('yesterday')).toBeNull();
    expect(microsOf('2025-05-01T12:00:00.123456789Z')).toBe('2025-05-01T12:00:00.123456Z');
    expect(timestampOf(new Date('2025-05-01T12:00:00.123Z'))).toBe('2025-05-01T12:00:00.123000000Z');
    expect(dockerSince('2025-05-01T12:00:00.123456789Z')).toBe(`${Date.parse('2025-05-01T12:00:00Z') / 1000}.123456789`);
  });

  it('of a query are ISO 8601 or a duration back from now', () => {
    const now = new Date('2025-05-01T12:00:00Z');
    expect(parseInstant('15m', 'since', now).toISOString()).toBe('2025-05-01T11:45:00.000Z');
    expect(parseInstant('1h30m', 'since', now).toISOString()).toBe('2025-05-01T10:30:00.000Z');
    expect(parseInstant('7d', 'start', now).toISOString()).toBe('2025-04-24T12:00:00.000Z');
    expect(parseInstant('2025-04-30T08:00:00+02:00', 'start', now).toISOString()).toBe('2025-04-30T06:00:00.000Z');
    // No zone: UTC.
    expect(parseInstant('2025-04-30T08:00', 'start', now).toISOString()).toBe('2025-04-30T08:00:00.000Z');
    expect(parseInstant('2025-04-30', 'end', now).toISOString()).toBe('2025-04-30T00:00:00.000Z');
    for (const bad of ['soon', '15', 'm15', '2025-02-30T00:00:00Z', '2025-05-01 12:00']) {
      expect(() => parseInstant(bad, 'since', now), bad).toThrow(/^since: must be an ISO 8601 time/);
    }
  });
});

describe("Docker's multiplexed output", () => {
  it('is split back into frames however the chunks cut it, and long lines are joined', () => {
    const ts = '2025-05-01T12:00:00.000000001Z';
    const long = 'x'.repeat(40_000);
    const body = Buffer.concat([
      frame(1, `${ts} ${long.slice(0, 16_384)}`),
      frame(2, `2025-05-01T12:00:00.000000002Z oops\n`),
      frame(1, `${ts} ${long.slice(16_384, 32_768)}`),
      frame(1, `${ts} ${long.slice(32_768)}\n`),
      frame(1, `2025-05-01T12:00:00.000000003Z é\n`),
    ]);
    for (const size of [1, 7, 100, body.length]) {
      const lines: LogLine[] = [];
      const asm = { stdout: new LineAssembler('stdout', labels, (l) => lines.push(l)), stderr: new LineAssembler('stderr', labels, (l) => lines.push(l)) };
      const demux = new DockerDemuxer((stream, payload) => asm[stream].entry(payload));
      for (let at = 0; at < body.length; at += size) demux.write(body.subarray(at, at + size));
      expect(
        lines.map((l) => [l.stream, l.ts, l.message.length > 20 ? l.message.length : l.message]),
        `chunks of ${size}`,
      ).toEqual([
        ['stderr', '2025-05-01T12:00:00.000000002Z', 'oops'],
        ['stdout', ts, 40_000],
        ['stdout', '2025-05-01T12:00:00.000000003Z', 'é'],
      ]);
    }
  });

  it('cuts a line that never ends at the limit, and keeps one cut mid-character whole', () => {
    const lines: LogLine[] = [];
    const asm = new LineAssembler('stdout', labels, (l) => lines.push(l));
    const chunk = 'é'.repeat(8192); // 16 KiB
    const ts = '2025-05-01T12:00:00.000000001Z ';
    const bytes = Buffer.from(chunk);
    // A two-byte character split between two entries.
    asm.entry(Buffer.concat([Buffer.from(ts), bytes.subarray(0, 1001)]));
    asm.entry(Buffer.concat([Buffer.from(ts), bytes.subarray(1001), Buffer.from('\n')]));
    expect(lines.map((l) => l.message)).toEqual([chunk]);
    lines.length = 0;
    for (let i = 0; i < MAX_LINE_BYTES / 16_384 + 1; i++) asm.entry(Buffer.concat([Buffer.from(ts), bytes]));
    asm.end();
    expect(lines.map((l) => Buffer.byteLength(l.message))).toEqual([MAX_LINE_BYTES, 16_384]);
  });
});

describe('the Kubernetes log stream', () => {
  it('is split into lines across chunks, with Go-style timestamps', () => {
    const lines: LogLine[] = [];
    const asm = new LineAssembler('stdout', labels, (l) => lines.push(l));
    const split = new EntrySplitter((e) => asm.entry(e));
    const text = Buffer.from('2025-05-01T12:00:00.5Z one\n2025-05-01T12:00:01Z two\n2025-05-01T12:00:02.000000003Z three');
    for (let at = 0; at < text.length; at += 5) split.write(text.subarray(at, at + 5));
    split.end();
    asm.end();
    expect(lines.map((l) => [l.ts, l.message])).toEqual([
      ['2025-05-01T12:00:00.500000000Z', 'one'],
      ['2025-05-01T12:00:01.000000000Z', 'two'],
      ['2025-05-01T12:00:02.000000003Z', 'three'],
    ]);
  });
});

describe('a follower falling behind', () => {
  it('loses the oldest lines and is told how many', async () => {
    const feed = new LogFeed();
    const sub = await feed.subscribe('s');
    const line = (n: number): LogLine => ({ ts: timestampOf(new Date(n)), replica: '0', deploymentId: null, stream: 'stdout', message: String(n) });
    feed.publish(
      's',
      'k',
      Array.from({ length: MAX_QUEUED_LINES + 5 }, (_, i) => line(i)),
    );
    feed.publish('other', 'k', [line(1)]);
    const batch = await sub.next(new AbortController().signal);
    expect(batch!.dropped).toBe(5);
    expect(batch!.lines).toHaveLength(MAX_QUEUED_LINES);
    expect(batch!.lines[0]!.line.message).toBe('5');
    // Waiting ends when the client goes.
    const gone = new AbortController();
    const waiting = sub.next(gone.signal);
    gone.abort();
    expect(await waiting).toBeNull();
    sub.close();
    expect(await sub.next(new AbortController().signal)).toBeNull();
  });
});
