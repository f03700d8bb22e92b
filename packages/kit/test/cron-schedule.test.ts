import { describe, expect, it } from 'vitest';
import { cronScheduleProblem, lastFireTime, nextFireTime } from '../src/cron-schedule.ts';

describe('cron schedules', () => {
  it('takes five fields or a macro, as Kubernetes does', () => {
    expect(cronScheduleProblem('*/5 * * * *')).toBeUndefined();
    expect(cronScheduleProblem('@hourly')).toBeUndefined();
    expect(cronScheduleProblem('*/5 * * * * *')).toMatch(/5 fields/);
    expect(cronScheduleProblem('61 * * * *')).toBeDefined();
    expect(cronScheduleProblem('@minutely')).toMatch(/unknown macro/);
    expect(lastFireTime('*/5 * * * *', new Date('2026-01-01T10:07:30Z')).toISOString()).toBe('2026-01-01T10:05:00.000Z');
    expect(lastFireTime('*/5 * * * *', new Date('2026-01-01T10:05:00Z')).toISOString()).toBe('2026-01-01T10:05:00.000Z');
  });

  it('gives the next fire time after an instant, in UTC', () => {
    expect(nextFireTime('0 3 * * *', new Date('2026-01-01T02:59:59Z')).toISOString()).toBe('2026-01-01T03:00:00.000Z');
    expect(nextFireTime('0 3 * * *', new Date('2026-01-01T03:00:00Z')).toISOString()).toBe('2026-01-02T03:00:00.000Z');
  });
});
