import { describe, expect, it } from 'vitest';
import { actorOf, forwardedClientAddress, requestContextOf, runAsPlatform, runWithRequestContext, currentRequestContext } from '../src/request-context.ts';
import { eventResource } from '../src/outbox.ts';
import { generateIdentityKeys, IdentityVerifier, importIdentityKey, signIdentity } from '../src/identity.ts';

describe('the request context of events', () => {
  it('carries the credential through the identity token', async () => {
    const keys = await generateIdentityKeys();
    const token = await signIdentity(
      await importIdentityKey(keys.privateJwk),
      { kind: 'user', subject: 'u1', email: 'a@example.test', credential: { kind: 'api_key', id: 'k1', name: 'ci' } },
      60,
    );
    const identity = await (await IdentityVerifier.fromJwk(keys.publicJwk)).verify(token);
    expect(actorOf(identity)).toEqual({ user_id: 'u1', email: 'a@example.test', credential: { kind: 'api_key', id: 'k1', name: 'ci' } });
    expect(actorOf({ kind: 'service', subject: 'compute' })).toBeNull();
  });

  it('takes only an IP address from the gateway header', () => {
    expect(forwardedClientAddress({ 'x-pier-client-address': '203.0.113.9' })).toBe('203.0.113.9');
    expect(forwardedClientAddress({ 'x-pier-client-address': '::ffff:10.0.0.1' })).toBe('10.0.0.1');
    expect(forwardedClientAddress({ 'x-pier-client-address': '2001:db8::1' })).toBe('2001:db8::1');
    expect(forwardedClientAddress({ 'x-pier-client-address': 'evil, 1.2.3.4' })).toBeNull();
    expect(forwardedClientAddress({})).toBeNull();
  });

  it('reaches what a request schedules, but not a platform pass', async () => {
    const ctx = requestContextOf({ kind: 'user', subject: 'u1' }, { 'x-pier-client-address': '198.51.100.1' });
    const seen = await runWithRequestContext(ctx, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return [currentRequestContext(), runAsPlatform(() => currentRequestContext())];
    });
    expect(seen).toEqual([{ actor: { user_id: 'u1', email: null, credential: null }, sourceIp: '198.51.100.1' }, undefined]);
    expect(currentRequestContext()).toBeUndefined();
  });

  it("names an event's resource from its kind and data unless told", () => {
    const base = { kind: 'service.build.started', workspaceId: 'w', resourceId: 'r', data: { name: 'web' } };
    expect(eventResource(base)).toEqual({ kind: 'service', id: 'r', name: 'web' });
    expect(eventResource({ ...base, resourceKind: 'member', resourceName: 'a@b' })).toEqual({ kind: 'member', id: 'r', name: 'a@b' });
    expect(eventResource({ ...base, data: {} })).toEqual({ kind: 'service', id: 'r', name: null });
  });
});
