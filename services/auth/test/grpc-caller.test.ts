// auth's gRPC port admits only the gateway to Authenticate and RecordUses: real auth, real
// gRPC. Before, anything that reached the port could try API keys there without the
// gateway's rate limits, read identity tokens back, and mark keys as used.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientConstructor, generateIdentityKeys, grpc, IDENTITY_HEADER, importIdentityKey, SERVICE_ISSUER, ServiceTokenSigner, signIdentity } from '@pier/kit';
import { startAuth, type AuthHarness } from './harness.ts';

let h: AuthHarness;
let client: grpc.Client;
let token: string;
let workspaceId: string;

type Outcome = { code: grpc.status; details: string } | { code: grpc.status.OK; body: Record<string, unknown> };

/** One raw unary call with exactly this identity header (none when undefined). */
function raw(method: 'Authenticate' | 'RecordUses' | 'FindVpc', req: object, identity?: string): Promise<Outcome> {
  const md = new grpc.Metadata();
  if (identity !== undefined) md.set(IDENTITY_HEADER, identity);
  return new Promise((resolve) => {
    const fn = (client as unknown as Record<string, (...a: unknown[]) => void>)[method]!;
    fn.call(client, req, md, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, res: Record<string, unknown>) =>
      resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, body: res }),
    );
  });
}

const serviceToken = async (privateJwk: string, subject: string) =>
  signIdentity(await importIdentityKey(privateJwk), { kind: 'service', subject }, 60, SERVICE_ISSUER);

beforeAll(async () => {
  h = await startAuth();
  token = h.running.bootstrap!.token!;
  workspaceId = h.running.bootstrap!.workspaceId;
  const Client = clientConstructor('auth.proto', 'auth.v1', 'Auth');
  client = new Client(`127.0.0.1:${h.running.grpcPort}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await h?.stop();
});

describe("auth's gRPC callers", () => {
  it('refuses Authenticate without a credential, with a forged one, or with a user identity token: UNAUTHENTICATED', async () => {
    const req = { token, workspace_id: workspaceId, vpc_id: '' };
    const rogue = await generateIdentityKeys();
    const userToken = await signIdentity(await importIdentityKey(h.keys.privateJwk), { kind: 'user', subject: 'someone', workspaceId }, 60);
    const attempts = {
      none: await raw('Authenticate', req),
      garbage: await raw('Authenticate', req, 'not-a-token'),
      'signed by another key': await raw('Authenticate', req, await serviceToken(rogue.privateJwk, 'gateway')),
      "a user's identity token": await raw('Authenticate', req, userToken),
    };
    for (const [what, outcome] of Object.entries(attempts)) {
      expect({ what, code: grpc.status[outcome.code] }).toEqual({ what, code: 'UNAUTHENTICATED' });
      expect('body' in outcome).toBe(false);
    }
  });

  it("refuses another service's token with PERMISSION_DENIED", async () => {
    const asCompute = await raw('Authenticate', { token, workspace_id: workspaceId, vpc_id: '' }, await serviceToken(h.gatewayKeys.privateJwk, 'compute'));
    expect(grpc.status[asCompute.code]).toBe('PERMISSION_DENIED');
  });

  it('refuses RecordUses without the gateway credential', async () => {
    const outcome = await raw('RecordUses', { api_key_ids: [h.running.bootstrap!.apiKeyId], session_ids: [] });
    expect(grpc.status[outcome.code]).toBe('UNAUTHENTICATED');
  });

  it("FindVpc needs the caller's identity token: none is UNAUTHENTICATED", async () => {
    const outcome = await raw('FindVpc', { identity_token: '', vpc_id: h.running.bootstrap!.vpcId });
    expect(grpc.status[outcome.code]).toBe('UNAUTHENTICATED');
  });

  it("answers the gateway's calls", async () => {
    const md = await new ServiceTokenSigner(h.gatewayKeys.privateJwk, 'gateway').metadata();
    const answer = await raw('Authenticate', { token, workspace_id: workspaceId, vpc_id: '' }, md.get(IDENTITY_HEADER)[0] as string);
    expect(answer.code).toBe(grpc.status.OK);
    expect('body' in answer && answer.body.user_id).toBe(h.running.bootstrap!.userId);
    const uses = await raw('RecordUses', { api_key_ids: [h.running.bootstrap!.apiKeyId], session_ids: [] }, md.get(IDENTITY_HEADER)[0] as string);
    expect(uses.code).toBe(grpc.status.OK);
    expect((await h.authenticate(token, workspaceId)).user_id).toBe(h.running.bootstrap!.userId);
  });
});
