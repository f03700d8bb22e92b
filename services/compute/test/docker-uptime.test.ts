import { describe, expect, it } from 'vitest';
import { uptimeMs } from '../src/cluster/docker-uptime.ts';

describe("a container's uptime from Docker's list", () => {
  it('reads every form Docker writes', () => {
    expect(uptimeMs('Up Less than a second')).toBe(0);
    expect(uptimeMs('Up 1 second')).toBe(1_000);
    expect(uptimeMs('Up 2 seconds')).toBe(2_000);
    expect(uptimeMs('Up 59 seconds (health: starting)')).toBe(59_000);
    expect(uptimeMs('Up About a minute')).toBe(60_000);
    expect(uptimeMs('Up 3 minutes (healthy)')).toBe(180_000);
    expect(uptimeMs('Up About an hour')).toBe(3_600_000);
    expect(uptimeMs('Up 5 hours (Paused)')).toBe(18_000_000);
    expect(uptimeMs('Up 2 days')).toBe(172_800_000);
  });

  it('says nothing for what is not running or not understood', () => {
    expect(uptimeMs('Restarting (1) 2 seconds ago')).toBeNull();
    expect(uptimeMs('Exited (1) 3 seconds ago')).toBeNull();
    expect(uptimeMs('Created')).toBeNull();
    expect(uptimeMs('')).toBeNull();
  });
});
