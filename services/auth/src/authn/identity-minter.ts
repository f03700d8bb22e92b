import { signIdentity, type Identity } from '@pier/kit';
import type { IdentityMinter } from '../domain/authn-port.ts';

type Key = Parameters<typeof signIdentity>[0];

const MAX_ENTRIES = 50_000;

/**
 * Signs identity tokens, reusing a token for the same (user, workspace, VPC, role, API key) for
 * half its lifetime so that EdDSA signing is not on every request. Only the token is
 * reused: who the caller is and what role they hold is decided afresh on every request
 * before we get here, and a change of role changes the key, so a stale role is never
 * handed out. A reused token still has at least half its lifetime left.
 */
export class CachingIdentityMinter implements IdentityMinter {
  private readonly cache = new Map<string, { token: string; expMs: number; freshUntilMs: number }>();

  constructor(
    private readonly key: Key,
    private readonly ttlSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  async mint(identity: Identity): Promise<{ token: string; expiresIn: number }> {
    const cacheKey = [
      identity.kind,
      identity.subject,
      identity.workspaceId ?? '',
      identity.vpcId ?? '',
      identity.role ?? '',
      identity.email ?? '',
      identity.apiKeyId ?? '',
      identity.credential?.kind ?? '',
      identity.credential?.id ?? '',
      identity.credential?.name ?? '',
    ].join('\n');
    const now = this.now();
    const hit = this.cache.get(cacheKey);
    if (hit && hit.freshUntilMs > now) return { token: hit.token, expiresIn: Math.floor((hit.expMs - now) / 1000) };
    // signIdentity sets exp = floor(now/1000) + ttl; mirror it so expires_in is exact.
    const expMs = (Math.floor(now / 1000) + this.ttlSeconds) * 1000;
    const token = await signIdentity(this.key, identity, this.ttlSeconds);
    if (this.cache.size >= MAX_ENTRIES) this.evict(now);
    this.cache.set(cacheKey, { token, expMs, freshUntilMs: now + (this.ttlSeconds * 1000) / 2 });
    return { token, expiresIn: Math.floor((expMs - now) / 1000) };
  }

  /** A service identity (kind `service`), for auth's own calls to other services. */
  async service(subject: string): Promise<string> {
    return (await this.mint({ kind: 'service', subject })).token;
  }

  private evict(now: number): void {
    for (const [k, v] of this.cache) if (v.freshUntilMs <= now) this.cache.delete(k);
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
  }
}
