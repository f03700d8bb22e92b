// The gateway's fault settings: their documented defaults, and a bad value stops start-up
// with a message naming the variable.
import { describe, expect, it } from 'vitest';
import { readConfig } from '../src/config.ts';

const base = { PIER_AUTH_GRPC_URL: '127.0.0.1:7002', PIER_AUTH_URL: 'http://127.0.0.1:7001' };

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
