// The reconciler's sweep: containers and volumes of this installation that no live record
// accounts for are deleted; another installation's objects, and objects without the
// installation label, are never touched (many services share one Docker engine in tests).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { ClusterDatabase } from '../src/domain/cluster-port.ts';
import { adminQuery, docker, installationObjects, startDatabases, testDockerCluster, until, CONTAINER_LABELS, type Databases } from './support.ts';

const labels = Object.fromEntries(CONTAINER_LABELS.split(',').map((kv) => kv.split('=') as [string, string]));
let h: Databases;
let installation: string;

beforeAll(async () => {
  h = await startDatabases();
  installation = (await adminQuery(h.db.adminUrl, 'select id from databases.installation'))[0].id;
});
afterAll(async () => {
  await h?.stop();
});

const adapter = (inst: string | undefined) => testDockerCluster({ installation: inst });

function database(): ClusterDatabase {
  const id = randomUUID();
  return {
    id,
    shortId: id.slice(0, 8),
    workspaceId: h.workspaceId,
    vpcId: h.vpcId,
    engine: 'postgresql',
    version: '15',
    instanceType: 'svc.nano',
    storageGb: 10,
    replicas: 0,
    externalAccessEnabled: false,
    allowlist: [],
    restore: null,
  };
}

const names = (d: { id: string }) => [`pier-db-${d.id}`, `pier-db-${d.id}-pooler`];

it("removes this installation's objects that no live record accounts for, and nothing else", async () => {
  const live = await h.request('POST', h.base, { name: 'kept' });
  expect(live.status).toBe(202);

  const mine = adapter(installation);
  // What a crash leaves: objects whose record never committed, or never was written.
  const orphan = database();
  await mine.apply(orphan);
  // A volume whose container was never created.
  const bare = database();
  await docker.createVolume({
    Name: `pier-db-${bare.id}`,
    Labels: {
      ...labels,
      'pier.managed': 'true',
      'pier.service': 'databases',
      'pier.database': bare.id,
      'pier.vpc': h.vpcId,
      'pier.engine': 'postgresql',
      'pier.installation': installation,
    },
  });
  // A record soft-deleted while its objects stayed.
  const buried = database();
  await mine.apply(buried);
  await adminQuery(
    h.db.adminUrl,
    `insert into databases.databases (id, short_id, workspace_id, vpc_id, name, engine, instance_type, storage_gb, version, replicas, external_access_enabled, status, provisioned, deleted_at)
     values ($1, $2, $3, $4, 'buried', 'postgresql', 'svc.nano', 10, '15', 0, false, 'deleted', true, now())`,
    [buried.id, buried.shortId, h.workspaceId, h.vpcId],
  );
  // Not this installation's: another one's, and one from before installations were labelled.
  const foreign = database();
  await adapter(randomUUID()).apply(foreign);
  const unlabelled = database();
  await adapter(undefined).apply(unlabelled);

  const kept = { containers: names(live.body), volumes: [`pier-db-${live.body.id}`] };
  await until(installationObjects.bind(null, installation, h.vpcId), (o) => JSON.stringify(o) === JSON.stringify(kept), 30_000);
  for (const survivor of [foreign, unlabelled]) {
    for (const name of names(survivor)) expect((await docker.getContainer(name).inspect()).Name).toBe(`/${name}`);
    expect((await docker.getVolume(`pier-db-${survivor.id}`).inspect()).Name).toBe(`pier-db-${survivor.id}`);
  }
  expect((await h.request('GET', `${h.base}/${live.body.id}`)).status).toBe(200);
  await adapter(undefined).delete(foreign);
  await adapter(undefined).delete(unlabelled);
}, 60_000);
