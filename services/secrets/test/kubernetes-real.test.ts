// The kubernetes secret store, and the whole service, on a REAL Kubernetes API server
// (deploy/kube/cluster.sh, started by ./pier test): real Secrets in the VPC's namespace.
// Only the control plane is needed. kubernetes-store.test.ts and kubernetes-service.test.ts
// keep the fake for what a real server does not do on demand (count requests, hold seeds).
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { IDENTITY_HEADER, secretObjectName, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesSecretStore } from '../src/cluster/kubernetes.ts';
import { encodingsOf, findInDatabase, startSecrets, expectUnreachableStoreWritesNothing, type Harness } from './support.ts';

let k: RealKubernetes;
const namespaces = new Set<string>();

beforeAll(() => {
  k = realKubernetes();
});
afterAll(async () => {
  if (k) for (const n of namespaces) await k.deleteNamespace(n);
});

const INSTALLATION = crypto.randomUUID();

describe('kubernetes secret store on a real API server', () => {
  const ref = { workspaceId: crypto.randomUUID(), vpcId: crypto.randomUUID(), secretId: crypto.randomUUID(), name: 'db-creds' };
  const ns = vpcNamespace(ref.vpcId);
  const secretPath = () => `/api/v1/namespaces/${ns}/secrets/${secretObjectName(ref.secretId)}`;
  let store: KubernetesSecretStore;

  beforeAll(() => {
    namespaces.add(ns);
    store = new KubernetesSecretStore(kubeConfigFrom(k.kubeconfig), INSTALLATION);
  });

  it('creates the VPC namespace, then an Opaque Secret holding exactly the values; replaces, lists, deletes', async () => {
    await store.ping();
    await store.apply(ref, { PASSWORD: 'hunter2', NOTE: 'ünï' });
    expect((await k.get(`/api/v1/namespaces/${ns}`)).metadata.labels).toMatchObject({ 'pier.dev/vpc-id': ref.vpcId });
    const s = await k.get(secretPath());
    expect(s.type).toBe('Opaque');
    expect(s.metadata.labels).toEqual({
      'app.kubernetes.io/managed-by': 'pier',
      'app.kubernetes.io/component': 'secret',
      'pier.dev/workspace-id': ref.workspaceId,
      'pier.dev/vpc-id': ref.vpcId,
      'pier.dev/secret-id': ref.secretId,
      'pier.dev/secret-name': 'db-creds',
      'pier.dev/installation': INSTALLATION,
    });
    expect(await store.read(ref)).toEqual({ PASSWORD: 'hunter2', NOTE: 'ünï' });
    expect(await store.observe(ref)).toEqual({ exists: true, keys: ['NOTE', 'PASSWORD'] });

    // Applying again (a retry after a crash) replaces the values wholesale.
    await store.apply(ref, { ONLY: 'this' });
    expect(Object.keys((await k.get(secretPath())).data)).toEqual(['ONLY']);
    expect(await store.list()).toEqual([{ vpcId: ref.vpcId, secretId: ref.secretId }]);

    await store.delete(ref);
    await store.delete(ref);
    expect((await k.request('GET', secretPath())).status).toBe(404);
    expect(await store.read(ref)).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });

  it('is refused by the API server for a key the Secret cannot hold', async () => {
    // The domain's rules stop this first; here the real server's own rule, which the fake copies.
    await expect(store.apply(ref, { 'not a key': 'x' })).rejects.toThrow(/Invalid value|a valid config key/);
  });
});

describe('secrets service on a real API server', () => {
  let h: Harness;
  let away: string | undefined;

  beforeAll(async () => {
    h = await startSecrets({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: k.kubeconfig, PIER_SECRETS_STORE_KEY: undefined });
    namespaces.add(vpcNamespace(h.vpcId));
  });
  afterAll(async () => {
    await h?.stop();
    if (away) await rm(path.dirname(away), { recursive: true, force: true });
  });

  it('keeps values in a real Secret in the VPC namespace, never in the database; deletes it', async () => {
    const value = `k8s-real-${crypto.randomUUID()}`;
    const res = await request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('owner'))
      .send({ name: 'stripe', values: { STRIPE_KEY: value } });
    expect(res.status).toBe(201);
    const s = await k.get(`/api/v1/namespaces/${vpcNamespace(h.vpcId)}/secrets/${secretObjectName(res.body.id)}`);
    expect(Buffer.from(s.data.STRIPE_KEY, 'base64').toString()).toBe(value);
    expect(await findInDatabase(h.db.adminUrl, encodingsOf(value))).toEqual([]);
    await request(h.url)
      .delete(`${h.base}/${res.body.id}`)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .expect(204);
    expect((await k.request('GET', `/api/v1/namespaces/${vpcNamespace(h.vpcId)}/secrets/${secretObjectName(res.body.id)}`)).status).toBe(404);
  });

  it('answers 503 cluster_unavailable and writes nothing when the API server is unreachable', async () => {
    away = await k.unreachableKubeconfig();
    const secretsIn = async () => (await k.list(`/api/v1/namespaces/${vpcNamespace(h.vpcId)}/secrets`, 'app.kubernetes.io/managed-by=pier')).length;
    await expectUnreachableStoreWritesNothing(h, away, k.kubeconfig, secretsIn);
  });
});
