import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { secretObjectName, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { FakeKubernetes, freePort } from '@pier/testing';
import { KubernetesSecretStore } from '../src/cluster/kubernetes.ts';

const INSTALLATION = crypto.randomUUID();

describe('kubernetes secret store (against a fake API server)', () => {
  let fake: FakeKubernetes;
  let store: KubernetesSecretStore;
  const ref = { workspaceId: crypto.randomUUID(), vpcId: crypto.randomUUID(), secretId: crypto.randomUUID(), name: 'db-creds' };
  const ns = vpcNamespace(ref.vpcId);

  beforeAll(async () => {
    fake = await new FakeKubernetes().start();
    store = new KubernetesSecretStore(kubeConfigFrom(await fake.writeKubeconfig()), INSTALLATION);
  });
  afterAll(() => fake.stop());

  it('creates the VPC namespace when missing, then an Opaque Secret named by id with Pier labels', async () => {
    await store.apply(ref, { PASSWORD: 'hunter2', NOTE: 'ünï' });
    expect(fake.invalid).toEqual([]);
    expect(fake.get('v1', 'Namespace', undefined, ns)).toBeDefined();
    const s = fake.get('v1', 'Secret', ns, secretObjectName(ref.secretId))!;
    expect(s.type).toBe('Opaque');
    expect(s.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'pier',
      'app.kubernetes.io/component': 'secret',
      'pier.dev/workspace-id': ref.workspaceId,
      'pier.dev/vpc-id': ref.vpcId,
      'pier.dev/secret-id': ref.secretId,
      'pier.dev/secret-name': 'db-creds',
      'pier.dev/installation': INSTALLATION,
    });
    expect(Buffer.from(s.data.PASSWORD, 'base64').toString()).toBe('hunter2');
    expect(await store.read(ref)).toEqual({ PASSWORD: 'hunter2', NOTE: 'ünï' });
    expect(await store.observe(ref)).toEqual({ exists: true, keys: ['NOTE', 'PASSWORD'] });
  });

  it('replaces an existing Secret on apply (idempotent), and lists by label', async () => {
    await store.apply(ref, { ONLY: 'this' });
    expect(fake.invalid).toEqual([]);
    expect(await store.read(ref)).toEqual({ ONLY: 'this' });
    expect(fake.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
    expect(await store.list()).toEqual([{ vpcId: ref.vpcId, secretId: ref.secretId }]);
  });

  it('deletes idempotently; a missing Secret reads as absent', async () => {
    await store.delete(ref);
    await store.delete(ref);
    expect(await store.read(ref)).toBeUndefined();
    expect(await store.observe(ref)).toEqual({ exists: false, keys: [] });
    expect(await store.list()).toEqual([]);
  });

  it('every Secret sent validates against the core schema', async () => {
    const { Secret } = await import('kubernetes-models/v1');
    const sent = fake.received.filter((b) => b.kind === 'Secret');
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent) expect(() => new Secret(body as never).validate()).not.toThrow();
  });

  it("lists only its own installation's Secrets: another Pier on the same cluster never sweeps them", async () => {
    // Two installations (say, a staging and a production Pier) share one cluster; each
    // sweeps what its list returns and its records do not know.
    const other = new KubernetesSecretStore(kubeConfigFrom(await fake.writeKubeconfig()), 'another-installation');
    const theirs = { ...ref, secretId: crypto.randomUUID(), name: 'theirs' };
    await other.apply(theirs, { A: 'x' });
    await store.apply(ref, { B: 'y' });
    expect(fake.get('v1', 'Secret', ns, secretObjectName(ref.secretId))!.metadata.labels).toMatchObject({ 'pier.dev/installation': INSTALLATION });
    expect(await store.list()).toEqual([{ vpcId: ref.vpcId, secretId: ref.secretId }]);
    expect(await other.list()).toEqual([{ vpcId: theirs.vpcId, secretId: theirs.secretId }]);
    await store.delete(ref);
    await other.delete(theirs);
  });

  it('fails when the API server cannot be reached', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${await freePort()}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const down = new KubernetesSecretStore(kc, INSTALLATION, 2000);
    await expect(down.apply(ref, { A: 'x' })).rejects.toThrow(/ECONNREFUSED/);
    await expect(down.delete(ref)).rejects.toThrow(/ECONNREFUSED/);
    await expect(down.read(ref)).rejects.toThrow(/ECONNREFUSED/);
  });
});
