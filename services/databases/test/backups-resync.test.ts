// Every read resyncs the backups from the repository, and many readers may do so at once:
// a listing that is older than the records (a reader that listed before another one
// recorded the completion) must not move a finished backup back to running, nor emit its
// events twice. The docker adapter is wrapped so that one read gets such a listing.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DockerCluster } from '../src/cluster/docker.ts';
import type { RepositoryListing } from '../src/domain/cluster-port.ts';
import { adminQuery, databaseChecks, startDatabases, testDockerCluster, type Databases } from './support.ts';

let h: Databases;
let real: DockerCluster;
/** Given to the next listBackups instead of the repository's answer, once. */
let stale: RepositoryListing | undefined;

beforeAll(async () => {
  h = await startDatabases(
    {},
    {
      cluster: (installation) => {
        real = testDockerCluster({ installation });
        const wrapped = Object.create(real) as DockerCluster;
        wrapped.listBackups = async (db) => {
          const given = stale;
          stale = undefined;
          return given ?? real.listBackups(db);
        };
        return wrapped;
      },
    },
  );
});

afterAll(async () => {
  await h?.stop();
});

it('keeps a completed backup completed when a reader brings a listing from while it ran', async () => {
  const { one, running, completed } = databaseChecks(h);
  const res = await h.post(h.base, { name: 'steady' });
  const id = res.body.id;
  await running(id);
  const taken = await h.post(`${one(id)}/backups`, {});
  expect(taken.status).toBe(202);
  const whileRunning = await real.listBackups({ id, shortId: id.slice(0, 8), vpcId: h.vpcId, engine: 'postgresql' });
  expect(whileRunning.backups.find((b) => b.name === taken.body.name)?.status).toBe('running');
  await completed(id, taken.body.name);

  stale = whileRunning;
  const after = await h.get(`${one(id)}/backups`);
  expect(stale).toBeUndefined(); // that read got the old listing
  expect(after.body.items.map((b: { status: string }) => b.status)).toEqual(['completed']);
  const kinds = (await adminQuery(h.db.adminUrl, `select kind from databases.outbox where kind like 'database.backup_%' order by id`)).map((r) => r.kind);
  expect(kinds).toEqual(['database.backup_started', 'database.backup_completed']);
}, 120_000);
