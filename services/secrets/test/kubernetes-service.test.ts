import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, secretObjectName, vpcNamespace } from '@pier/kit';
import { Secret } from 'kubernetes-models/v1';
import { FakeKubernetes, freePort } from '@pier/testing';
import { SecretsClient } from '../src/index.ts';
import { secretManifest } from '../src/cluster/kubernetes.ts';
import { adminQuery, encodingsOf, findInDatabase, secretRows, startSecrets, expectUnreachableStoreWritesNothing, type Harness } from './support.ts';

// The whole service on PIER_CLUSTER=kubernetes, against the in-process fake API server:
// values land in a Secret in the VPC namespace and nowhere in our database.

describe('secrets on kubernetes', () => {
  let fake: FakeKubernetes;
  let h: Harness;
  let kubeconfig: string;
  const ns = () => vpcNamespace(h.vpcId);
  /** The installation id the service labels its Secrets with (its schema's one row). */
  const installation = async () => (await adminQuery<{ id: string }>(h.db.adminUrl, 'select id from secrets.installation'))[0]!.id;

  beforeAll(async () => {
    fake = await new FakeKubernetes().start();
    kubeconfig = await fake.writeKubeconfig();
    // No docker store key or dir: the kubernetes cluster needs neither.
    h = await startSecrets({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_SECRETS_STORE_KEY: undefined });
  });
  afterAll(async () => {
    await h?.stop();
    await fake?.stop();
  });

  it('creates a Secret in the VPC namespace, never the database; lists, resolves and deletes it', async () => {
    const value = `k8s-canary-${crypto.randomUUID()}`;
    const res = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('owner'))
      .send({ name: 'stripe', values: { STRIPE_KEY: value } });
    expect(res.status).toBe(201);
    expect(res.body.keys).toEqual(['STRIPE_KEY']);
    const secret = fake.get('v1', 'Secret', ns(), secretObjectName(res.body.id))!;
    expect(secret.metadata.labels['pier.dev/secret-name']).toBe('stripe');
    expect(Buffer.from(secret.data.STRIPE_KEY, 'base64').toString()).toBe(value);
    expect(fake.invalid).toEqual([]);
    for (const body of fake.received.filter((b) => b.kind === 'Secret')) expect(() => new Secret(body as never).validate()).not.toThrow();

    expect(await findInDatabase(h.db.adminUrl, encodingsOf(value))).toEqual([]);
    for (const n of encodingsOf(value)) expect(h.logs.text).not.toContain(n);

    const client = new SecretsClient({ address: h.grpcAddress, privateKeyJwk: h.computeKeys.privateJwk });
    try {
      expect(await client.resolveReferences(h.workspaceId, h.vpcId, [{ secretId: res.body.id, key: 'STRIPE_KEY' }])).toEqual([
        { secretId: res.body.id, key: 'STRIPE_KEY', value },
      ]);
    } finally {
      client.close();
    }

    const list = await request(h.url)
      .get(h.base)
      .set(IDENTITY_HEADER, await h.token('viewer'));
    expect(list.body.items.map((i: { id: string }) => i.id)).toEqual([res.body.id]);
    await request(h.url)
      .delete(`${h.base}/${res.body.id}`)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .expect(204);
    expect(fake.get('v1', 'Secret', ns(), secretObjectName(res.body.id))).toBeUndefined();
  });

  it('settles records a crash left pending against the cluster', async () => {
    const leave = async (name: string, state: string) => {
      const [row] = await adminQuery<{ id: string }>(
        h.db.adminUrl,
        `insert into secrets.secrets (workspace_id, vpc_id, name, keys, state, updated_at)
         values ($1, $2, $3, '{K}', $4, now() - interval '10 minutes') returning id`,
        [h.workspaceId, h.vpcId, name, state],
      );
      fake.seed(secretManifest({ workspaceId: h.workspaceId, vpcId: h.vpcId, secretId: row!.id, name }, { K: 'v' }, await installation()));
      return row!.id;
    };
    const creating = await leave('left-creating', 'creating');
    const deleting = await leave('left-deleting', 'deleting');
    await h.restart();
    await h.running.reconcile();
    expect((await secretRows(h.db.adminUrl)).filter((r) => r.id === creating || r.id === deleting)).toEqual([]);
    expect(fake.get('v1', 'Secret', ns(), secretObjectName(creating))).toBeUndefined();
    expect(fake.get('v1', 'Secret', ns(), secretObjectName(deleting))).toBeUndefined();
  });

  it("sweeps its own Secrets without a record, never another installation's on the same cluster", async () => {
    const orphan = { workspaceId: h.workspaceId, vpcId: h.vpcId, secretId: crypto.randomUUID(), name: 'orphan' };
    const theirs = { ...orphan, secretId: crypto.randomUUID(), name: 'theirs' };
    fake.seed(secretManifest(orphan, { K: 'v' }, await installation()));
    fake.seed(secretManifest(theirs, { K: 'v' }, crypto.randomUUID()));
    // The sweep runs in the start-up pass.
    await h.restart();
    await h.running.reconcile();
    expect(fake.get('v1', 'Secret', ns(), secretObjectName(orphan.secretId))).toBeUndefined();
    expect(fake.get('v1', 'Secret', ns(), secretObjectName(theirs.secretId))).toBeDefined();
  });

  it('answers 503 cluster_unavailable and writes nothing when the API server is unreachable', async () => {
    const unreachable = await fake.writeKubeconfig(`http://127.0.0.1:${await freePort()}`);
    await expectUnreachableStoreWritesNothing(h, unreachable, kubeconfig, async () => fake.list('Secret').length);
  });
});
