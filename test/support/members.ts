// People in the bootstrap workspace with a given role, the way they arrive: signed in by
// a dashboard JWT, owner of a workspace of their own where they made an API key, then
// added as a member. Their key then acts with that role here.
import { expect } from 'vitest';
import type { Platform } from './platform.ts';
import type { OidcProvider } from './oidc.ts';

export type MemberRole = 'admin' | 'developer' | 'viewer';

/** Adds `email` to the bootstrap workspace as `role` and returns an API key of theirs. */
export async function memberKey(p: Platform, oidc: OidcProvider, email: string, role: MemberRole): Promise<string> {
  const me = p.api(await oidc.sign(email));
  const home = await me.post('/api/v1/workspaces', { name: `home-${email.split('@')[0]}` });
  expect(home.status).toBe(201);
  const key = await me.post(`/api/v1/workspaces/${home.body.id}/api-keys`, { name: 'laptop' });
  expect(key.status).toBe(201);
  const added = await p.api(p.bootstrap.token).post(`/api/v1/workspaces/${p.bootstrap.workspaceId}/members`, { email, role });
  expect(added.status).toBe(201);
  return key.body.key;
}
