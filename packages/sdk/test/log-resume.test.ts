import { describe, expect, it } from 'vitest';
import { LogResume } from '../src/log-resume.ts';

const line = (timestamp: string, message: string, replica = '0') => ({ timestamp, replica, stream: 'stdout', message });

describe('LogResume', () => {
  it('has no since before a line, then the newest timestamp seen', () => {
    const r = new LogResume();
    expect(r.since).toBeUndefined();
    r.fresh(line('2026-01-01T00:00:01.000000Z', 'a'));
    r.fresh(line('2026-01-01T00:00:02.000000Z', 'b'));
    expect(r.since).toBe('2026-01-01T00:00:02.000000Z');
  });

  it('a resumed stream repeats the lines at `since` and older ones: only the new ones are fresh', () => {
    const r = new LogResume();
    const first = [line('2026-01-01T00:00:01.000000Z', 'a'), line('2026-01-01T00:00:02.000000Z', 'b'), line('2026-01-01T00:00:02.000000Z', 'c', '1')];
    expect(first.map((l) => r.fresh(l))).toEqual([true, true, true]);
    // The API answers from `since` inclusive: b and c again, then what was printed meanwhile,
    // including a line at the same instant from another replica.
    const resumed = [
      line('2026-01-01T00:00:01.000000Z', 'a'),
      ...first.slice(1),
      line('2026-01-01T00:00:02.000000Z', 'd', '2'),
      line('2026-01-01T00:00:03.000000Z', 'e'),
    ];
    expect(resumed.map((l) => r.fresh(l))).toEqual([false, false, false, true, true]);
    expect(r.since).toBe('2026-01-01T00:00:03.000000Z');
  });
});
