// GET /api/v1/database-engines: what the installation's cluster adapter offers, as the
// provisioning rules will check it, for any signed-in user (no workspace in the path).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { importIdentityKey, INSTANCE_TYPE_NAMES, signIdentity } from '@pier/kit';
import { FakeKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { startDatabases, testDockerCluster, type Databases } from './support.ts';

const ENGINES = '/api/v1/database-engines';
const ABOVE_NANO = INSTANCE_TYPE_NAMES.filter((t) => t !== 'svc.nano');

let h: Databases;
beforeAll(async () => {
  h = await startDatabases();
});
afterAll(async () => {
  await h?.stop();
});

/** An identity token of a signed-in user outside any workspace (as auth signs it for a path without one). */
async function userToken(): Promise<string> {
  return signIdentity(await importIdentityKey(h.keys.privateJwk), { kind: 'user', subject: randomUUID(), email: 'someone@example.test' }, 60);
}

describe('database engines', () => {
  it("answers the docker adapter's real capabilities to any signed-in user, a Viewer too", async () => {
    const caps = testDockerCluster().capabilities;
    const res = await h.request('GET', ENGINES, undefined, { token: await userToken() });
    expect(res.status).toBe(200);
    // Versions as the adapter holds them; the rest as the spec and the README say.
    const offer = (engine: 'postgresql' | 'mysql', rest: Record<string, unknown>) => ({
      engine,
      versions: caps.engines[engine].versions,
      default_version: caps.engines[engine].defaultVersion,
      storage_gb: { min: 1, max: 1024, default: 10, enforced: false },
      ...rest,
    });
    expect(res.body).toEqual({
      adapter: 'docker',
      items: [
        offer('postgresql', {
          server: 'PostgreSQL',
          instance_types: INSTANCE_TYPE_NAMES,
          default_instance_type: 'svc.nano',
          replicas: { min: 0, max: 5, default: 0, odd_only: false, shrinks: true },
        }),
        offer('mysql', {
          server: 'MariaDB',
          instance_types: ABOVE_NANO,
          default_instance_type: 'svc.small',
          replicas: { min: 1, max: 5, default: 1, odd_only: true, shrinks: true },
        }),
      ],
    });
    expect(caps.engines.postgresql.versions).toEqual(['15']);
    expect((await h.request('GET', ENGINES, undefined, { role: 'viewer' })).body).toEqual(res.body);
  });

  it('offers exactly what provisioning accepts: the default version, and refuses what it leaves out', async () => {
    const { body } = await h.request('GET', ENGINES, undefined, { token: await userToken() });
    const mysql = body.items.find((e: { engine: string }) => e.engine === 'mysql');
    const refused = await h.request('POST', h.base, { name: 'too-small', engine: 'mysql', instance_type: 'svc.nano' });
    expect(mysql.instance_types).not.toContain('svc.nano');
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe('instance_type');
    const unknown = await h.request('POST', h.base, { name: 'old', postgres_version: '9' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'invalid_request', field: 'postgres_version' });
    expect(unknown.body.error).toContain(body.items[0].versions.join(', '));
  });

  it('refuses a call without an identity (401) and one from a Pier service (403)', async () => {
    const none = await fetch(h.url + ENGINES);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ error: expect.any(String), code: expect.any(String) });
    const service = await signIdentity(await importIdentityKey(h.keys.privateJwk), { kind: 'service', subject: 'compute' }, 60);
    const res = await h.request('GET', ENGINES, undefined, { token: service });
    expect(res.status).toBe(403);
    expect(res.body.code).toEqual(expect.any(String));
  });

  it('is described in the service API document', async () => {
    const paths = await (await fetch(`${h.url}/internal/openapi`)).json();
    expect(paths[ENGINES].get['x-pier-role']).toBe('any authenticated user');
  });

  it("answers the kubernetes adapter's operators' versions, without a call to the cluster", async () => {
    const down = new FakeKubernetes();
    await down.start();
    await down.stop(); // a port that no longer answers: the offer is the adapter's, not the cluster's
    const kc = new KubeConfig();
    kc.loadFromString(down.kubeconfig());
    const h2 = await startDatabases({}, { cluster: (installation) => new KubernetesCluster(kc, { installation, domains: {}, timeoutMs: 1000 }) });
    try {
      const res = await h2.request('GET', ENGINES, undefined, { role: 'viewer' });
      expect(res.status).toBe(200);
      expect(res.body.adapter).toBe('kubernetes');
      const [pg, mysql] = res.body.items;
      expect(pg).toMatchObject({ engine: 'postgresql', versions: ['13', '14', '15', '16', '17'], default_version: '16', storage_gb: { enforced: true } });
      expect(pg.replicas).toEqual({ min: 0, max: 8, default: 0, odd_only: false, shrinks: true });
      expect(mysql).toMatchObject({ engine: 'mysql', server: 'MySQL', versions: ['8.0', '8.4'], default_version: '8.4', instance_types: ABOVE_NANO });
      expect(mysql.replicas).toEqual({ min: 1, max: 5, default: 1, odd_only: true, shrinks: false });
    } finally {
      await h2.stop();
    }
  });
});
