import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientConstructor, generateIdentityKeys, grpc, IDENTITY_HEADER, type PierError } from '@pier/kit';
import { SecretsClient } from '../src/index.ts';
import { computeToken, startSecrets, type Harness } from './support.ts';

// Compute's side of the contract: check and resolve references over gRPC, as compute's
// own identity only.

describe('secrets gRPC (CheckReferences / ResolveReferences)', () => {
  let h: Harness;
  let client: SecretsClient;
  let secretId: string;
  let otherVpcSecretId: string;

  const rejection = async (p: Promise<unknown>): Promise<PierError> => {
    try {
      await p;
    } catch (err) {
      return err as PierError;
    }
    throw new Error('expected the call to fail');
  };

  beforeAll(async () => {
    h = await startSecrets();
    client = new SecretsClient({ address: h.grpcAddress, privateKeyJwk: h.computeKeys.privateJwk });
    const created = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .send({ name: 'db', values: { DB_PASSWORD: 'pw-1', DB_USER: 'app' } });
    secretId = created.body.id;
    const otherVpc = crypto.randomUUID();
    const other = await request(h.url)
      .post(`/api/v1/workspaces/${h.workspaceId}/vpcs/${otherVpc}/secrets`)
      .set(IDENTITY_HEADER, await h.token('admin', { workspaceId: h.workspaceId, vpcId: otherVpc }))
      .send({ name: 'db', values: { DB_PASSWORD: 'other-vpc' } });
    otherVpcSecretId = other.body.id;
  });
  afterAll(async () => {
    client?.close();
    await h?.stop();
  });

  it('checks references: none missing, or each missing one with its reason', async () => {
    expect(
      await client.checkReferences(h.workspaceId, h.vpcId, [
        { secretId, key: 'DB_PASSWORD' },
        { secretId, key: 'DB_USER' },
      ]),
    ).toEqual([]);
    const unknown = crypto.randomUUID();
    expect(
      await client.checkReferences(h.workspaceId, h.vpcId, [
        { secretId, key: 'NOPE' },
        { secretId: unknown, key: 'X' },
        { secretId: 'not-a-uuid', key: 'X' },
        // A secret of another VPC does not resolve here.
        { secretId: otherVpcSecretId, key: 'DB_PASSWORD' },
      ]),
    ).toEqual([
      { secretId, key: 'NOPE', reason: 'key_not_found' },
      { secretId: unknown, key: 'X', reason: 'secret_not_found' },
      { secretId: 'not-a-uuid', key: 'X', reason: 'secret_not_found' },
      { secretId: otherVpcSecretId, key: 'DB_PASSWORD', reason: 'secret_not_found' },
    ]);
  });

  it('resolves references to values from the store, in request order', async () => {
    expect(
      await client.resolveReferences(h.workspaceId, h.vpcId, [
        { secretId, key: 'DB_USER' },
        { secretId, key: 'DB_PASSWORD' },
      ]),
    ).toEqual([
      { secretId, key: 'DB_USER', value: 'app' },
      { secretId, key: 'DB_PASSWORD', value: 'pw-1' },
    ]);
    const otherWs = await rejection(client.resolveReferences(crypto.randomUUID(), h.vpcId, [{ secretId, key: 'DB_USER' }]));
    expect(otherWs.code).toBe('missing_secret');
  });

  it('fails the whole resolve with missing_secret, naming each missing reference', async () => {
    const err = await rejection(
      client.resolveReferences(h.workspaceId, h.vpcId, [
        { secretId, key: 'DB_USER' },
        { secretId, key: 'GONE' },
      ]),
    );
    expect(err.kind).toBe('not_found');
    expect(err.code).toBe('missing_secret');
    expect(err.message).toBe(`missing secret: secret ${secretId} has no key GONE`);
  });

  it('reports a deleted secret as missing', async () => {
    const created = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .send({ name: 'temp', values: { T: 't' } });
    expect(await client.resolveReferences(h.workspaceId, h.vpcId, [{ secretId: created.body.id, key: 'T' }])).toHaveLength(1);
    await request(h.url)
      .delete(`${h.base}/${created.body.id}`)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .expect(204);
    const err = await rejection(client.resolveReferences(h.workspaceId, h.vpcId, [{ secretId: created.body.id, key: 'T' }]));
    expect(err.message).toBe(`missing secret: secret ${created.body.id} does not exist`);
  });

  it('rejects malformed requests with INVALID_ARGUMENT', async () => {
    expect((await rejection(client.checkReferences('', h.vpcId, []))).kind).toBe('invalid');
    expect((await rejection(client.checkReferences(h.workspaceId, h.vpcId, [{ secretId: '', key: 'K' }]))).kind).toBe('invalid');
  });

  it('refuses every identity but compute’s own', async () => {
    const refs = [{ secretId, key: 'DB_PASSWORD' }];
    // Another key pair claiming to be compute: the signature does not verify.
    const impostorKeys = await generateIdentityKeys();
    const impostor = new SecretsClient({ address: h.grpcAddress, privateKeyJwk: impostorKeys.privateJwk });
    // Compute's key, but naming another service.
    const wrongSubject = new SecretsClient({ address: h.grpcAddress, privateKeyJwk: h.computeKeys.privateJwk, subject: 'databases' });
    try {
      const a = await rejection(impostor.resolveReferences(h.workspaceId, h.vpcId, refs));
      expect(a.kind).toBe('unauthenticated');
      const b = await rejection(wrongSubject.resolveReferences(h.workspaceId, h.vpcId, refs));
      expect(b.kind).toBe('forbidden');
      expect(b.code).toBe('caller_not_allowed');
      expect((await rejection(wrongSubject.checkReferences(h.workspaceId, h.vpcId, refs))).kind).toBe('forbidden');
    } finally {
      impostor.close();
      wrongSubject.close();
    }

    // Tokens auth signs (users, and auth's own service identity) are not compute's.
    const Raw = clientConstructor('secrets.proto', 'secrets.v1', 'Secrets');
    const raw = new Raw(h.grpcAddress, grpc.credentials.createInsecure());
    const callWith = (token?: string) =>
      new Promise<grpc.ServiceError | null>((resolve) => {
        const md = new grpc.Metadata();
        if (token) md.set(IDENTITY_HEADER, token);
        (raw as any).ResolveReferences(
          { workspace_id: h.workspaceId, vpc_id: h.vpcId, refs: [{ secret_id: secretId, key: 'DB_PASSWORD' }] },
          md,
          (err: grpc.ServiceError | null) => resolve(err),
        );
      });
    try {
      expect((await callWith())?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await callWith(await h.token('owner')))?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await callWith(await h.serviceToken('compute')))?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(await callWith(await computeToken(h.computeKeys.privateJwk))).toBeNull();
    } finally {
      raw.close();
    }
    // No value reached the logs through any of this.
    expect(h.logs.text).not.toContain('pw-1');
  });
});
