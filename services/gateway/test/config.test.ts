// The gateway's fault settings: their documented defaults, and a bad value stops start-up
// with a message naming the variable.
import { describe, expect, it } from 'vitest';
import { readConfig } from '../src/config.ts';
import { start } from '../src/server.ts';

const base = { PIER_AUTH_GRPC_URL: '127.0.0.1:7002', PIER_AUTH_URL: 'http://127.0.0.1:7001', PIER_GATEWAY_SERVICE_PRIVATE_KEY: '{}' };

describe('fault settings', () => {
  it('default to 750 ms for auth, a 1 s reconnect cap and 30 s for services', () => {
    expect(readConfig(base)).toMatchObject({ PIER_AUTH_TIMEOUT_MS: 750, PIER_AUTH_RECONNECT_MAX_MS: 1000, PIER_UPSTREAM_TIMEOUT_MS: 30_000 });
  });

  it('take whole milliseconds', () => {
    expect(readConfig({ ...base, PIER_AUTH_TIMEOUT_MS: '200', PIER_AUTH_RECONNECT_MAX_MS: '5000', PIER_UPSTREAM_TIMEOUT_MS: '500' })).toMatchObject({
      PIER_AUTH_TIMEOUT_MS: 200,
      PIER_AUTH_RECONNECT_MAX_MS: 5000,
      PIER_UPSTREAM_TIMEOUT_MS: 500,
    });
  });

  it.each([
    ['PIER_AUTH_TIMEOUT_MS', '0'],
    ['PIER_AUTH_TIMEOUT_MS', 'soon'],
    ['PIER_AUTH_RECONNECT_MAX_MS', '999999999'],
    ['PIER_UPSTREAM_TIMEOUT_MS', '1.5'],
  ])('refuse %s=%s, naming it', (name, value) => {
    expect(() => readConfig({ ...base, [name]: value })).toThrow(new RegExp(`${name}: ${name} must be a whole number of milliseconds`));
  });
});

describe('the authentication cache', () => {
  it('is on when NATS is given, off without it or when asked', () => {
    expect(readConfig(base).PIER_AUTH_CACHE).toBe('on');
    expect(readConfig(base).PIER_NATS_URL).toBeUndefined();
    expect(readConfig({ ...base, PIER_NATS_URL: '' }).PIER_NATS_URL).toBeUndefined();
    expect(readConfig({ ...base, PIER_NATS_URL: 'nats://127.0.0.1:4222', PIER_AUTH_CACHE: 'off' })).toMatchObject({ PIER_AUTH_CACHE: 'off' });
    expect(() => readConfig({ ...base, PIER_AUTH_CACHE: 'yes' })).toThrow(/PIER_AUTH_CACHE must be on or off/);
  });
});

describe('the caller credential and the lease limit', () => {
  it("needs the gateway's own key: auth admits no call without it", () => {
    const { PIER_GATEWAY_SERVICE_PRIVATE_KEY: _, ...withoutKey } = base;
    expect(() => readConfig(withoutKey)).toThrow(/PIER_GATEWAY_SERVICE_PRIVATE_KEY is required/);
  });

  it('stops at start, naming it, when that key cannot sign', async () => {
    const config = readConfig({
      ...base,
      PIER_GATEWAY_PORT: '0',
      PIER_GATEWAY_METRICS_PORT: '0',
      PIER_LOG_LEVEL: 'silent',
      PIER_GATEWAY_SERVICE_PRIVATE_KEY: 'not json',
    });
    await expect(start(config)).rejects.toThrow(/PIER_GATEWAY_SERVICE_PRIVATE_KEY cannot sign/);
  });

  it('caps any epoch tick at 500 ms unless told otherwise, within 100-10000 ms', () => {
    expect(readConfig(base).PIER_AUTH_CACHE_MAX_LEASE_MS).toBe(500);
    expect(readConfig({ ...base, PIER_AUTH_CACHE_MAX_LEASE_MS: '2000' }).PIER_AUTH_CACHE_MAX_LEASE_MS).toBe(2000);
    expect(() => readConfig({ ...base, PIER_AUTH_CACHE_MAX_LEASE_MS: '3600000' })).toThrow(
      /PIER_AUTH_CACHE_MAX_LEASE_MS must be a whole number of milliseconds/,
    );
  });
});
