import { describe, it, expect } from 'vitest';
import { Periodic } from '../src/index.ts';

describe('Periodic', () => {
  it('runs the first pass at once, then passes that never overlap, and goes on after a failure', async () => {
    const events: string[] = [];
    let active = 0;
    let overlap = false;
    const errors: unknown[] = [];
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
      (err) => errors.push(err),
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
    expect(errors).toHaveLength(1);
    expect(events.length).toBe(after); // nothing after stop
  });
});
