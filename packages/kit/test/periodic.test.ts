import { describe, it, expect } from 'vitest';
import { Writable } from 'node:stream';
import { Periodic, createLogger } from '../src/index.ts';

/** A logger whose lines (pino JSON, debug and up) are kept to be read. */
function capturedLogger() {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger('test', 'debug', sink), lines };
}

describe('Periodic', () => {
  it('runs the first pass at once, then passes that never overlap, and goes on after a failure', async () => {
    const events: string[] = [];
    let active = 0;
    let overlap = false;
    const { log, lines } = capturedLogger();
    let n = 0;
    const loop = new Periodic(
      async () => {
        active++;
        if (active > 1) overlap = true;
        n++;
        events.push(`pass ${n}`);
        await new Promise((r) => setTimeout(r, 15));
        active--;
        if (n === 2) throw new Error('boom');
      },
      5,
      { log, what: 'test pass' },
    );
    loop.start(async () => {
      events.push('first');
    });
    await new Promise((r) => setTimeout(r, 150));
    await loop.stop();
    const after = events.length;
    await new Promise((r) => setTimeout(r, 50));
    expect(events[0]).toBe('first');
    expect(events.slice(1, 4)).toEqual(['pass 1', 'pass 2', 'pass 3']);
    expect(overlap).toBe(false);
    expect(lines.filter((l) => l.msg.startsWith('test pass failed'))).toHaveLength(1);
    expect(events.length).toBe(after); // nothing after stop
  });

  it('says a lasting failure once, a new cause again, and the recovery once', async () => {
    const { log, lines } = capturedLogger();
    const causes = ['engine gone', 'engine gone', 'engine gone', 'disk full', 'disk full', null, null];
    let i = 0;
    const loop = new Periodic(
      async () => {
        const cause = causes[Math.min(i++, causes.length - 1)];
        if (cause) throw new Error(cause);
      },
      2,
      { log, what: 'test pass' },
    );
    loop.start();
    while (i < causes.length) await new Promise((r) => setTimeout(r, 5));
    await loop.stop();
    const said = lines.map((l) => `${l.level} ${l.msg}`);
    expect(said.filter((l) => l.startsWith('40 '))).toEqual([
      '40 test pass failed; will retry (said once until the cause changes)',
      '40 test pass failed; will retry (said once until the cause changes)',
    ]);
    expect(lines.filter((l) => l.level === 40).map((l) => (l as any).err)).toEqual(['Error: engine gone', 'Error: disk full']);
    expect(said.filter((l) => l.startsWith('20 '))).toHaveLength(3);
    expect(said.filter((l) => l.startsWith('30 '))).toEqual(['30 test pass recovered']);
  });
});
