// A fault promise of the whole platform: PostgreSQL down (its container stopped), every
// service answers 503 `unavailable` within 2 s, writes nothing partial, and recovers
// without a restart within 10 s of PostgreSQL returning.
//
// The test runs its own PostgreSQL container (never the suite's shared one), on a fixed
// host port so `docker start` brings it back where the services' pools look for it. Each
// service is called twice during the outage: through the gateway (auth answers for all of
// them there, as every request is authenticated first) and on its own port with a signed
// identity, so each service's own answer is proven, not only auth's.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StartedTestContainer } from 'testcontainers';
import { importIdentityKey, signIdentity } from '@pier/kit';
import { docker } from '@pier/testing';
import { startPlatformAt } from '../support/platform-core.ts';
import { PG_PASSWORD, startPostgresContainer } from '../global-setup.ts';
import { freePort, type Api, type ApiResponse, type Platform } from '../support/platform.ts';

const OUTAGE_ANSWER_MS = 2000;
const RECOVERY_MS = 10_000;
const SCHEMAS = ['auth', 'compute', 'databases', 'secrets'];

let pgContainer: StartedTestContainer;
let p: Platform;
let ws: string;
let vpc: string;
/** The same calls, through the gateway and straight to each service. */
let viaGateway: Calls;
let direct: Calls;

type Call = (tag: string) => Promise<ApiResponse>;
type Calls = Record<string, Call>;

function callsOf(apis: { auth: Api; compute: Api; databases: Api; secrets: Api }): Calls {
  const vpcPath = (rest: string) => `/api/v1/workspaces/${ws}/vpcs/${vpc}${rest}`;
  return {
    'auth: list api keys': () => apis.auth.get(`/api/v1/workspaces/${ws}/api-keys`),
    'auth: create api key': (tag) => apis.auth.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `key-${tag}` }),
    'compute: list services': () => apis.compute.get(vpcPath('/services')),
    'compute: create service': (tag) => apis.compute.post(vpcPath('/services'), { name: `svc-${tag}` }),
    'databases: list databases': () => apis.databases.get(vpcPath('/databases')),
    'secrets: list secrets': () => apis.secrets.get(vpcPath('/secrets')),
    'secrets: create secret': (tag) => apis.secrets.post(vpcPath('/secrets'), { name: `secret-${tag}`, values: { K: 'v' } }),
  };
}

/** Rows of every table of the services' schemas, by table. */
async function rowCounts(): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: p.database.adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_schema: string; table_name: string }>(
      `select table_schema, table_name from information_schema.tables where table_schema = any($1) and table_type = 'BASE TABLE' order by 1, 2`,
      [SCHEMAS],
    );
    const counts: Record<string, number> = {};
    for (const r of rows) {
      const res = await client.query<{ n: number }>(
        `select count(*)::int as n from ${pg.escapeIdentifier(r.table_schema)}.${pg.escapeIdentifier(r.table_name)}`,
      );
      counts[`${r.table_schema}.${r.table_name}`] = res.rows[0]!.n;
    }
    return counts;
  } finally {
    await client.end();
  }
}

/** Outbox rows not yet published to NATS, over every service. */
async function unpublished(): Promise<number> {
  const client = new pg.Client({ connectionString: p.database.adminUrl });
  await client.connect();
  try {
    const counts = SCHEMAS.map((s) => `(select count(*)::int from ${pg.escapeIdentifier(s)}.outbox where published_at is null)`);
    const { rows } = await client.query<{ n: number }>(`select ${counts.join(' + ')} as n`);
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

async function timed(call: () => Promise<ApiResponse>): Promise<{ res: ApiResponse; ms: number }> {
  const start = performance.now();
  const res = await call();
  return { res, ms: Math.round(performance.now() - start) };
}

const isOk = (status: number) => status === 200 || status === 201;

beforeAll(async () => {
  const port = await freePort();
  // The suite's image and wait strategy, on a fixed host port, which a stopped-and-started
  // container keeps.
  pgContainer = await startPostgresContainer(port);
  p = await startPlatformAt({
    postgresAdminUrl: `postgres://postgres:${PG_PASSWORD}@${pgContainer.getHost()}:${port}/postgres`,
    natsUrl: inject('natsUrl') ?? process.env.PIER_TEST_NATS_URL!,
  });
  ws = p.bootstrap.workspaceId;
  vpc = p.bootstrap.vpcId;
  const owner = p.api(p.bootstrap.token);
  viaGateway = callsOf({ auth: owner, compute: owner, databases: owner, secrets: owner });
  const me = await owner.get('/api/v1/me');
  expect(me.status).toBe(200);
  const key = await importIdentityKey(p.keys.privateJwk);
  const identity = await signIdentity(key, { kind: 'user', subject: me.body.id, email: p.bootstrap.email, workspaceId: ws, vpcId: vpc, role: 'owner' }, 600);
  const at = (url: string | undefined) => p.apiAt(url!, { 'x-pier-identity': identity });
  direct = callsOf({
    auth: at(p.serviceUrls.auth),
    compute: at(p.serviceUrls.compute),
    databases: at(p.serviceUrls.databases),
    secrets: at(p.serviceUrls.secrets),
  });
}, 180_000);

afterAll(async () => {
  // PostgreSQL may still be stopped if the test failed mid-outage: bring it back so the
  // platform's own clean-up (dropping its database) does not wait on it.
  await docker
    .getContainer(pgContainer?.getId() ?? 'none')
    .start()
    .catch(() => undefined);
  await p?.stop();
  await pgContainer?.stop();
}, 120_000);

describe('PostgreSQL down', () => {
  it('every service answers 503 unavailable within 2 s, writes nothing, and recovers without a restart within 10 s', async () => {
    const report: string[] = [];
    try {
      await outage(report);
    } finally {
      console.log(report.join('\n'));
    }
  }, 120_000);
});

/** Every call, both ways in: through the gateway and straight to the service. */
function everyCall(): { name: string; call: Call }[] {
  return (['gateway', 'direct'] as const).flatMap((via) =>
    Object.entries(via === 'gateway' ? viaGateway : direct).map(([name, call]) => ({ name: `${via} ${name}`, call })),
  );
}

/** Every read and write succeeds, each write under a name carrying `tag`. */
async function expectAllOk(tag: string): Promise<void> {
  for (const [i, { name, call }] of everyCall().entries()) {
    const res = await call(`${tag}-${i}`);
    expect(isOk(res.status), `${name} ${tag}: ${res.status} ${JSON.stringify(res.body)}`).toBe(true);
  }
}

async function outage(report: string[]): Promise<void> {
  // Reads and writes succeed before the outage, on every service and both ways in.
  await expectAllOk('before');
  const before = await rowCounts();

  await docker.getContainer(pgContainer.getId()).stop({ t: 10 });

  // Twice: right after the stop (the pools hold dead connections) and once they are gone.
  for (const round of [1, 2]) {
    for (const [i, { name, call }] of everyCall().entries()) {
      const { res, ms } = await timed(() => call(`during-${round}-${i}`));
      report.push(`outage round ${round} ${name}: ${res.status} ${res.body?.code} in ${ms} ms`);
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(503);
      expect(res.body, name).toMatchObject({ code: 'unavailable' });
      expect(ms, name).toBeLessThan(OUTAGE_ANSWER_MS);
    }
  }

  const started = performance.now();
  await docker.getContainer(pgContainer.getId()).start();
  // Every read, both ways in, answers 200 again; each service is timed from `docker start`.
  const pending = new Map(
    everyCall()
      .filter(({ name }) => name.includes(': list'))
      .map(({ name, call }) => [name, call] as const),
  );
  while (pending.size > 0 && performance.now() - started < RECOVERY_MS) {
    for (const [name, call] of [...pending]) {
      const res = await call('recovery');
      if (res.status === 200) {
        report.push(`recovered ${name} after ${Math.round(performance.now() - started)} ms`);
        pending.delete(name);
      }
    }
    if (pending.size > 0) await new Promise((r) => setTimeout(r, 100));
  }
  expect([...pending.keys()], 'still failing 10 s after PostgreSQL returned').toEqual([]);

  // Nothing the outage refused was written, in part or in whole.
  expect(await rowCounts()).toEqual(before);

  // Writes go through again, still within the 10 s.
  await expectAllOk('after');
  const recovered = Math.round(performance.now() - started);
  report.push(`every read and write answered 2xx ${recovered} ms after docker start`);
  expect(recovered).toBeLessThan(RECOVERY_MS);

  // The outbox relays survived the outage: every event, the new writes' too, reaches NATS.
  while ((await unpublished()) > 0 && performance.now() - started < 2 * RECOVERY_MS) await new Promise((r) => setTimeout(r, 100));
  expect(await unpublished(), 'outbox rows still unpublished').toBe(0);
  report.push(`every outbox row published ${Math.round(performance.now() - started)} ms after docker start`);

  // The lists show the writes made before and after, none made during.
  const lists = await Promise.all([
    viaGateway['auth: list api keys']!(''),
    viaGateway['compute: list services']!(''),
    viaGateway['secrets: list secrets']!(''),
  ]);
  const names = lists.flatMap((l) => (l.body.items as { name: string }[]).map((i) => i.name));
  expect(names.filter((n) => n.includes('during'))).toEqual([]);
  expect(names.filter((n) => n.includes('before')).length).toBe(6);
  expect(names.filter((n) => n.includes('after')).length).toBe(6);
}
