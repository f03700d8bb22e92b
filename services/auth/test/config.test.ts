import { describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { readConfig } from '../src/index.ts';

// Configuration is checked at start-up and a bad variable is named.

describe('auth configuration', async () => {
  const keys = await generateIdentityKeys();
  const base = {
    PIER_DATABASE_URL: 'postgres://pier_auth:x@127.0.0.1:5432/pier',
    PIER_NATS_URL: 'nats://127.0.0.1:4222',
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
  };

  it('has the documented defaults', () => {
    const c = readConfig({ ...base, HOME: '/home/someone' });
    expect(c).toMatchObject({
      PIER_AUTH_HTTP_PORT: 7101,
      PIER_AUTH_GRPC_PORT: 7111,
      PIER_BOOTSTRAP: true,
      PIER_BOOTSTRAP_EMAIL: 'owner@localhost',
      PIER_PUBLIC_URL: 'http://127.0.0.1:7100',
      PIER_IDENTITY_TTL_SECONDS: 60,
      PIER_AUTH_CACHE_LEASE_MS: 500,
      PIER_AUTH_CACHE_CLOCK_SKEW_MS: 250,
    });
    expect(c.PIER_OIDC_ISSUER).toBeUndefined();
    expect(c.PIER_CONFIG_DIR).toMatch(/\.config\/pier$/);
    expect(readConfig({ ...base, PIER_BOOTSTRAP: 'false' }).PIER_BOOTSTRAP).toBe(false);
    expect(readConfig({ ...base, PIER_BOOTSTRAP_EMAIL: 'owner@localhost' }).PIER_BOOTSTRAP_EMAIL).toBe('owner@localhost');
  });

  it('names what is wrong', async () => {
    const other = await generateIdentityKeys();
    expect(() => readConfig({ ...base, PIER_IDENTITY_PRIVATE_KEY: '{not json' })).toThrow(/PIER_IDENTITY_PRIVATE_KEY: must be an Ed25519 private JWK/);
    expect(() => readConfig({ ...base, PIER_IDENTITY_PRIVATE_KEY: keys.publicJwk })).toThrow(/PIER_IDENTITY_PRIVATE_KEY/);
    expect(() => readConfig({ ...base, PIER_IDENTITY_PRIVATE_KEY: other.privateJwk })).toThrow(/does not match PIER_IDENTITY_PUBLIC_KEY/);
    expect(() => readConfig({ ...base, PIER_OIDC_ISSUER: 'https://idp' })).toThrow(/all of PIER_OIDC_ISSUER, PIER_OIDC_JWKS_URL and PIER_OIDC_AUDIENCE/);
    expect(() => readConfig({ ...base, PIER_BOOTSTRAP: 'maybe' })).toThrow(/PIER_BOOTSTRAP/);
    expect(() => readConfig({ ...base, PIER_BOOTSTRAP_EMAIL: 'nobody' })).toThrow(/PIER_BOOTSTRAP_EMAIL/);
    expect(() => readConfig({ ...base, PIER_COMPUTE_URL: 'not a url' })).toThrow(/PIER_COMPUTE_URL/);
    // A lease shorter than three epoch ticks would lapse between them.
    expect(() => readConfig({ ...base, PIER_AUTH_CACHE_LEASE_MS: '100' })).toThrow(
      /PIER_AUTH_CACHE_LEASE_MS must be a whole number of milliseconds, 300 to 10000/,
    );
    expect(() => readConfig({ ...base, PIER_AUTH_CACHE_CLOCK_SKEW_MS: '-1' })).toThrow(/PIER_AUTH_CACHE_CLOCK_SKEW_MS/);
    const { PIER_IDENTITY_PRIVATE_KEY: _, ...missing } = base;
    expect(() => readConfig(missing)).toThrow(/PIER_IDENTITY_PRIVATE_KEY/);
  });
});
