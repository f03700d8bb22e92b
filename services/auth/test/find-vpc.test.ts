// gRPC FindVpc: a resource service asks, with the caller's own identity token, whether a
// VPC is one of the caller's workspace. Auth answers for that token's workspace only.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateIdentityKeys, importIdentityKey, PierError, signIdentity } from '@pier/kit';
import { startAuth, type AuthHarness } from './harness.ts';

let h: AuthHarness;
let ws: string;
let vpc: string;
let staging: string;
let foreign: string;
let token: string;

async function refusal(p: Promise<unknown>): Promise<PierError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PierError);
  return err as PierError;
}

beforeAll(async () => {
  h = await startAuth();
  const boot = h.running.bootstrap!;
  ws = boot.workspaceId;
  vpc = boot.vpcId;
  const owner = await h.as({ subject: boot.userId, workspaceId: ws, role: 'owner' });
  staging = (await owner.post(`/api/v1/workspaces/${ws}/vpcs`).send({ name: 'staging' }).expect(201)).body.id;
  const me = await h.as({ subject: boot.userId });
  const other = (await me.post('/api/v1/workspaces').send({ name: 'elsewhere' }).expect(201)).body.id;
  const them = await h.as({ subject: boot.userId, workspaceId: other, role: 'owner' });
  foreign = (await them.get(`/api/v1/workspaces/${other}/vpcs`).expect(200)).body.items[0].id;
  token = (await h.authenticate(boot.token!, ws, vpc)).identity_token;
});

afterAll(async () => {
  await h?.stop();
});

describe('FindVpc', () => {
  it("finds the VPCs of the token's workspace, and no other", async () => {
    expect(await h.findVpc(token, staging)).toEqual({ found: true });
    expect(await h.findVpc(token, vpc.toUpperCase())).toEqual({ found: true });
    // A VPC of another workspace of the same user: not this workspace's.
    expect(await h.findVpc(token, foreign)).toEqual({ found: false });
    expect(await h.findVpc(token, randomUUID())).toEqual({ found: false });
    expect(await h.findVpc(token, 'not-an-id')).toEqual({ found: false });
  });

  it('refuses a token auth did not issue, one of no workspace, and a service identity', async () => {
    const stranger = await importIdentityKey((await generateIdentityKeys()).privateJwk);
    const forged = await signIdentity(stranger, { kind: 'user', subject: randomUUID(), workspaceId: ws, role: 'owner' }, 60);
    expect(await refusal(h.findVpc(forged, staging))).toMatchObject({ kind: 'unauthenticated' });
    const noWorkspace = (await h.authenticate(h.running.bootstrap!.token!)).identity_token;
    expect(await refusal(h.findVpc(noWorkspace, staging))).toMatchObject({ kind: 'unauthenticated' });
    const own = await importIdentityKey(h.keys.privateJwk);
    const service = await signIdentity(own, { kind: 'service', subject: 'databases', workspaceId: ws }, 60);
    expect(await refusal(h.findVpc(service, staging))).toMatchObject({ kind: 'unauthenticated' });
    expect(await refusal(h.findVpc('', staging))).toMatchObject({ kind: 'unauthenticated' });
  });
});
