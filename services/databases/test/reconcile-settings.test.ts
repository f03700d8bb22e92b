import { describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { pendingGraceMs, readConfig } from '../src/config.ts';

// The reconciler's settings: the grace in seconds, with the milliseconds name it had before
// still read (deployments and suites set it) when the new one is not set.

describe('databases reconciler settings', async () => {
  const keys = await generateIdentityKeys();
  const base = {
    PIER_DATABASE_URL: 'postgres://pier_databases:x@127.0.0.1:5432/pier',
    PIER_NATS_URL: 'nats://127.0.0.1:4222',
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
  };

  it('has the documented defaults', () => {
    const c = readConfig(base);
    expect(pendingGraceMs(c)).toBe(120_000);
    expect(c.PIER_DATABASES_SWEEP_INTERVAL_SECONDS).toBe(20);
    expect(c.PIER_DATABASES_RECONCILE_INTERVAL_MS).toBe(2000);
  });

  it('reads the grace in seconds, else the deprecated milliseconds, and the seconds win over it', () => {
    expect(pendingGraceMs(readConfig({ ...base, PIER_DATABASES_PENDING_GRACE_SECONDS: '1.5' }))).toBe(1500);
    expect(pendingGraceMs(readConfig({ ...base, PIER_DATABASES_PENDING_GRACE_MS: '600000' }))).toBe(600_000);
    expect(pendingGraceMs(readConfig({ ...base, PIER_DATABASES_PENDING_GRACE_MS: '600000', PIER_DATABASES_PENDING_GRACE_SECONDS: '3' }))).toBe(3000);
    expect(() => readConfig({ ...base, PIER_DATABASES_SWEEP_INTERVAL_SECONDS: '0' })).toThrow(/PIER_DATABASES_SWEEP_INTERVAL_SECONDS/);
  });
});
