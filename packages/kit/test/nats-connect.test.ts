// How a service's NATS settings become nats.js options: nats.js reads no credentials from a
// URL, so they are moved out of it, and a user's replies go to its own inbox prefix.
import { describe, expect, it } from 'vitest';
import { natsConnectOptions, natsTarget } from '../src/nats-connect.ts';

describe('natsConnectOptions', () => {
  it('leaves a URL without credentials as it is (tests, development)', () => {
    expect(natsConnectOptions('nats://127.0.0.1:4222')).toEqual({ servers: 'nats://127.0.0.1:4222' });
  });

  it('takes the user and password out of the URL, decoded, and gives the user its inbox prefix', () => {
    expect(natsConnectOptions('nats://compute:p%40ss%3Aword@nats.example.com:4222')).toEqual({
      servers: 'nats://nats.example.com:4222',
      user: 'compute',
      pass: 'p@ss:word',
      inboxPrefix: '_INBOX.compute',
    });
  });

  it('uses PIER_NATS_USER and PIER_NATS_PASSWORD, which win over the URL', () => {
    const env = { PIER_NATS_URL: 'nats://other:x@127.0.0.1:4222', PIER_NATS_USER: 'gateway', PIER_NATS_PASSWORD: 'secret' };
    expect(natsConnectOptions(natsTarget(env))).toEqual({ servers: 'nats://127.0.0.1:4222', user: 'gateway', pass: 'secret', inboxPrefix: '_INBOX.gateway' });
  });
});
