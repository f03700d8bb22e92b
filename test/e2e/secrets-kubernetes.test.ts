// Secrets through the gateway with PIER_CLUSTER=kubernetes, against the in-process fake
// of the Kubernetes API: values land in a Secret in the VPC's namespace (validated against
// the core schema), never in Pier's database; an unreachable API server is a 503 with
// nothing written anywhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretObjectName, vpcNamespace } from '@pier/kit';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { FakeKubernetes, validateManifest } from '@pier/testing';
import { adminQuery, encodingsOf, findInDatabase, secretRows } from '../../services/secrets/test/support.ts';

let p: Platform;
let fake: FakeKubernetes;
let owner: Api;
let base: string;

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  p = await startPlatform({
    env: { secrets: { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: await fake.writeKubeconfig(), PIER_SECRETS_STORE_KEY: undefined } },
  });
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/secrets`;
}, 120_000);

afterAll(async () => {
  await p?.stop();
  await fake?.stop();
});

describe('secrets on kubernetes, through the gateway', () => {
  it('keeps values in a Secret in the VPC namespace and nowhere in the database', async () => {
    const value = `k8s-e2e-${crypto.randomUUID()}`;
    const res = await owner.post(base, { name: 'payments', values: { PAYMENTS_KEY: value, REGION: 'eu' } });
    expect(res.status).toBe(201);
    const ns = vpcNamespace(p.bootstrap.vpcId);
    expect(fake.get('v1', 'Namespace', undefined, ns)).toBeDefined();
    const secret = fake.get('v1', 'Secret', ns, secretObjectName(res.body.id))!;
    expect(secret).toMatchObject({ kind: 'Secret', type: 'Opaque', metadata: { namespace: ns } });
    expect(Buffer.from(secret.data.PAYMENTS_KEY, 'base64').toString()).toBe(value);
    expect(fake.invalid).toEqual([]);
    for (const body of fake.received.filter((b) => b.kind === 'Secret')) expect(() => validateManifest(body)).not.toThrow();

    expect(await findInDatabase(p.database.adminUrl, encodingsOf(value))).toEqual([]);
    expect((await owner.get(`${base}/${res.body.id}`)).body.keys).toEqual(['PAYMENTS_KEY', 'REGION']);

    expect((await owner.delete(`${base}/${res.body.id}`)).status).toBe(204);
    expect(fake.get('v1', 'Secret', ns, secretObjectName(res.body.id))).toBeUndefined();
  });

  it('answers 503 with nothing written when the API server is unreachable', async () => {
    const kept = await owner.post(base, { name: 'kept', values: { K: 'v' } });
    expect(kept.status).toBe(201);
    const rows = await secretRows(p.database.adminUrl);
    const outbox = await adminQuery(p.database.adminUrl, 'select count(*)::int as n from secrets.outbox');
    const objects = fake.list('Secret').map((s) => `${s.metadata.namespace}/${s.metadata.name}`);
    await fake.stop(); // its port is closed from here on
    const res = await owner.post(base, { name: 'unreachable', values: { K: 'v' } });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('cluster_unavailable');
    expect(await secretRows(p.database.adminUrl)).toEqual(rows);
    expect(await adminQuery(p.database.adminUrl, 'select count(*)::int as n from secrets.outbox')).toEqual(outbox);
    expect(fake.list('Secret').map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual(objects);
    // A delete that cannot reach the cluster leaves the secret in place, too.
    expect((await owner.delete(`${base}/${kept.body.id}`)).status).toBe(503);
    expect((await owner.get(`${base}/${kept.body.id}`)).status).toBe(200);
  });
});
