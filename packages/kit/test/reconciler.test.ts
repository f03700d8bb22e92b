import { describe, it, expect } from 'vitest';
import { Writable } from 'node:stream';
import { KeyedMutex, Reconciler, createLogger, pendingStep, type ReconcilerParts, type ReconcilerSettings } from '../src/index.ts';

/** A logger whose lines (pino JSON, debug and up) are kept to be read. */
function capturedLogger() {
  const lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  return { log: createLogger('test', 'debug', sink), lines };
}

const GRACE_MS = 60_000;
const SWEEP_EVERY_MS = 300_000;

/**
 * A service in miniature: rows left pending at a time of the test's clock, settled by
 * deleting them; a sweep that counts its runs. Everything real but the cluster.
 */
function world(opts: Partial<ReconcilerSettings> = {}) {
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const pending = new Map<string, number>();
  const settledIds: string[] = [];
  const failing = new Set<string>();
  let sweeps = 0;
  let observed = 0;
  const { log, lines } = capturedLogger();
  const locks = new KeyedMutex();
  const parts: ReconcilerParts = {
    observe: async () => {
      observed++;
    },
    steps: [
      pendingStep({
        what: 'finish a thing',
        pending: async (before: Date) => [...pending].filter(([, at]) => at < before.getTime()).map(([id]) => ({ id })),
        key: (item) => item.id,
        settle: async (item) => {
          if (failing.has(item.id)) throw new Error(`cluster refused ${item.id}`);
          pending.delete(item.id);
          settledIds.push(item.id);
        },
      }),
    ],
    sweep: async () => {
      sweeps++;
      return 0;
    },
  };
  const reconciler = new Reconciler(parts, {
    service: 'test',
    resources: 'things',
    log,
    now: () => new Date(clock),
    locks,
    intervalMs: 3_600_000,
    graceMs: GRACE_MS,
    sweepEveryMs: SWEEP_EVERY_MS,
    ...opts,
  });
  return {
    reconciler,
    locks,
    lines,
    settledIds,
    failing,
    /** Leaves a row pending, a moment ago (as a request would before its cluster call). */
    leave: (id: string) => pending.set(id, clock - 1),
    advance: (ms: number) => (clock += ms),
    isPending: (id: string) => pending.has(id),
    sweeps: () => sweeps,
    observed: () => observed,
  };
}

describe('Reconciler', () => {
  it('settles everything pending at start-up, however young, and sweeps', async () => {
    const w = world();
    w.leave('a');
    w.advance(1);
    w.leave('b'); // a millisecond before the pass: as young as a row can be
    const report = await w.reconciler.runOnce();
    expect(w.settledIds.sort()).toEqual(['a', 'b']);
    expect(report).toEqual({ settled: { 'finish a thing': 2 }, failed: 0, swept: 0 });
    expect(w.sweeps()).toBe(1);
    expect(w.observed()).toBe(1);
    expect(w.lines.map((l) => l.msg)).toContain('reconciled things left pending');
  });

  it('leaves an item younger than the grace to its request on later passes, then settles it', async () => {
    const w = world();
    await w.reconciler.runOnce();
    w.leave('young');
    w.advance(GRACE_MS - 2);
    await w.reconciler.runOnce();
    expect(w.isPending('young')).toBe(true);
    w.advance(2);
    await w.reconciler.runOnce();
    expect(w.isPending('young')).toBe(false);
    expect(w.observed()).toBe(3);
  });

  it('keeps the grace at start-up too when another instance may be serving', async () => {
    const w = world({ soleInstance: false });
    w.leave('sibling-in-flight');
    w.advance(GRACE_MS - 2);
    await w.reconciler.runOnce();
    expect(w.isPending('sibling-in-flight')).toBe(true);
    w.advance(2);
    await w.reconciler.runOnce();
    expect(w.isPending('sibling-in-flight')).toBe(false);
  });

  it('sweeps on its own cadence, in time rather than in passes', async () => {
    const w = world();
    await w.reconciler.runOnce();
    for (let i = 0; i < 20; i++) {
      w.advance(SWEEP_EVERY_MS / 40);
      await w.reconciler.runOnce();
    }
    expect(w.sweeps()).toBe(1); // half the interval passed, over twenty passes
    w.advance(SWEEP_EVERY_MS / 2);
    await w.reconciler.runOnce();
    expect(w.sweeps()).toBe(2);
    await w.reconciler.runOnce();
    expect(w.sweeps()).toBe(2);
  });

  it('skips an item whose key a request holds, and settles it once the request is done', async () => {
    const w = world();
    w.leave('held');
    w.leave('free');
    let release!: () => void;
    const request = w.locks.run('held', () => new Promise<void>((r) => (release = r)));
    await w.reconciler.runOnce();
    expect(w.settledIds).toEqual(['free']);
    expect(w.isPending('held')).toBe(true);
    release();
    await request;
    w.advance(GRACE_MS);
    await w.reconciler.runOnce();
    expect(w.settledIds).toEqual(['free', 'held']);
  });

  it('settles the rest when items fail, and warns once for the step', async () => {
    const w = world();
    for (const id of ['a', 'b', 'c', 'd']) w.leave(id);
    w.failing.add('a');
    w.failing.add('c');
    const report = await w.reconciler.runOnce();
    expect(w.settledIds).toEqual(['b', 'd']);
    expect(report.failed).toBe(2);
    const warnings = w.lines.filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual(['reconcile: could not finish a thing; will retry']);
    expect(warnings[0]).toMatchObject({ failed: 2, first: { id: 'a', err: 'Error: cluster refused a' } });
    // Tried again at the next pass, once past the grace.
    w.failing.clear();
    w.advance(GRACE_MS);
    await w.reconciler.runOnce();
    expect(w.settledIds).toEqual(['b', 'd', 'a', 'c']);
  });

  it('runs the start-up pass when started, reports it recovered, joins a pass in progress, and stops', async () => {
    const w = world({ intervalMs: 5 });
    w.leave('left-by-a-crash');
    w.reconciler.start();
    const joined = w.reconciler.runOnce();
    await w.reconciler.recovered();
    expect(w.isPending('left-by-a-crash')).toBe(false);
    expect((await joined).settled).toEqual({ 'finish a thing': 1 });
    await new Promise((r) => setTimeout(r, 50));
    await w.reconciler.stop();
    const passes = w.observed();
    expect(passes).toBeGreaterThan(1);
    await new Promise((r) => setTimeout(r, 30));
    expect(w.observed()).toBe(passes);
  });
});
