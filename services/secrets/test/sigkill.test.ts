// SIGKILL of secrets in the middle of a create (and of a delete), for real: secrets runs as
// its own process, a crash point (PIER_CRASH_AT) kills it between the store write and the
// commit that makes the record `ready` (and after the commit, before the answer; inside the
// docker store's write, before the rename; between the store delete and the record's), and
// the next process on the same records and the same store must converge within a bound: no
// store object (nor a temporary file holding sealed values) without a `ready` record, no
// record left `creating` or `deleting`, each event once or never.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, generateIdentityKeys, importIdentityKey, signIdentity } from '@pier/kit';
import { adminQuery, createTestDatabase, deathAt, infra, spawnService, until, type ServiceProcess, type TestDatabase } from '@pier/testing';

/** The grace before a pending record counts as abandoned, and the pass interval, in this suite. */
const GRACE_SECONDS = 2;
/** How long the next process may take to converge after its start: the grace, a sweep (every 5 s), slack. */
const CONVERGE_MS = 20_000;

let db: TestDatabase;
let storeRoot: string;
let proc: ServiceProcess | undefined;
let env: Record<string, string>;
let token: string;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/secrets`;

const spawn = async (more: Record<string, string> = {}) => (proc = await spawnService('secrets', { ...env, PIER_CRASH_AT: '', ...more }));
const sql = (query: string, params: unknown[] = []) => adminQuery(db.adminUrl, query, params);
const rows = () => sql('select id, name, state from secrets.secrets order by created_at') as Promise<{ id: string; name: string; state: string }[]>;
const eventsOf = async (id: string) => (await sql(`select kind from secrets.outbox where payload->>'resource_id' = $1 order by id`, [id])).map((r) => r.kind);
/** Every entry of the VPC's store directory: `<id>.secret` objects and `.<id>.<random>.tmp` files. */
const storeFiles = async () => (await readdir(path.join(storeRoot, `vpc-${vpcId}`)).catch(() => [] as string[])).sort();

async function call(
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`http://127.0.0.1:${proc!.httpPort}${url}`, {
    method,
    headers: { [IDENTITY_HEADER]: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** Starts a process armed to die at `point`, runs `act` (whose answer the crash cuts off), and waits for the death. */
async function crashAt(point: string, act: () => Promise<unknown>): Promise<void> {
  await proc?.stop();
  const armed = await spawn({ PIER_CRASH_AT: point });
  const how = await deathAt(armed, point, act);
  // tsx relays its child's death by SIGKILL as exit status 128 + 9.
  expect([137, 'SIGKILL'], armed.output()).toContain(how);
}

/** What every crash must come back to: only `ready` records, and exactly their objects in the store. */
async function converged(): Promise<void> {
  const all = await rows();
  expect(all.filter((r) => r.state !== 'ready')).toEqual([]);
  expect(await storeFiles()).toEqual(all.map((r) => `${r.id}.secret`).sort());
}

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  storeRoot = path.join(await mkdtemp(path.join(tmpdir(), 'pier-secrets-sigkill-')), 'store');
  const keys = await generateIdentityKeys();
  token = await signIdentity(await importIdentityKey(keys.privateJwk), { kind: 'user', subject: randomUUID(), role: 'owner', workspaceId, vpcId }, 3600);
  env = {
    PIER_DATABASE_URL: db.urls.secrets,
    PIER_NATS_URL: infra().natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_SECRETS_HTTP_PORT: '0',
    PIER_SECRETS_GRPC_PORT: '0',
    // spawnService learns the port from the "listening" line.
    PIER_LOG_LEVEL: 'info',
    PIER_SECRETS_STORE_DIR: storeRoot,
    PIER_SECRETS_STORE_KEY: randomBytes(32).toString('base64'),
    PIER_SECRETS_RECONCILE_INTERVAL_SECONDS: '0.5',
    PIER_SECRETS_PENDING_GRACE_SECONDS: String(GRACE_SECONDS),
    PIER_SECRETS_SWEEP_INTERVAL_SECONDS: '5',
  };
  await spawn();
});

afterAll(async () => {
  await proc?.stop();
  await rm(path.dirname(storeRoot ?? '/nonexistent/x'), { recursive: true, force: true });
  await db?.drop();
}, 60_000);

describe('SIGKILL of secrets in the middle of a create or delete', () => {
  it('create, between the store write and the commit: undone, the values gone from the store', async () => {
    await crashAt('secrets.create.stored', () => call('POST', base, { name: 'cut', values: { TOKEN: 'never-answered' } }));
    const [left] = await rows();
    expect(left).toMatchObject({ name: 'cut', state: 'creating' });
    expect(await storeFiles()).toEqual([`${left!.id}.secret`]); // the store had it

    await spawn();
    await until(rows, (r) => r.length === 0, CONVERGE_MS);
    await until(storeFiles, (f) => f.length === 0, CONVERGE_MS);
    expect(await eventsOf(left!.id)).toEqual([]);
    await converged();
    // The name is free again.
    expect((await call('POST', base, { name: 'cut', values: { TOKEN: 'v' } })).status).toBe(201);
  });

  it('create, inside the store write before its rename: the temporary file and the record go', async () => {
    await crashAt('secrets.store.written', () => call('POST', base, { name: 'half-written', values: { TOKEN: 'sealed-but-stray' } }));
    const left = (await rows()).find((r) => r.name === 'half-written')!;
    expect(left.state).toBe('creating');
    expect((await storeFiles()).filter((f) => f.startsWith(`.${left.id}.`) && f.endsWith('.tmp'))).toHaveLength(1);

    await spawn();
    await until(
      async () => ({ record: (await rows()).some((r) => r.id === left.id), files: (await storeFiles()).filter((f) => f.includes(left.id)) }),
      (l) => !l.record && l.files.length === 0,
      CONVERGE_MS,
    );
    expect(await eventsOf(left.id)).toEqual([]);
    await converged();
  });

  it('create, after the commit and before the answer: the secret stands, readable, announced once', async () => {
    await crashAt('secrets.create.committed', () => call('POST', base, { name: 'kept', values: { TOKEN: 'answered-never' } }));
    const left = (await rows()).find((r) => r.name === 'kept')!;
    expect(left.state).toBe('ready');

    await spawn();
    expect((await call('GET', `${base}/${left.id}`)).body).toMatchObject({ name: 'kept', keys: ['TOKEN'] });
    // A client retrying the create it got no answer to learns the name is taken.
    expect((await call('POST', base, { name: 'kept', values: { TOKEN: 'again' } })).status).toBe(409);
    expect(await eventsOf(left.id)).toEqual(['secret.created']);
    await converged();
  });

  it('delete, between the store delete and the record delete: finished, announced once', async () => {
    const doomed = await call('POST', base, { name: 'doomed', values: { TOKEN: 'v' } });
    expect(doomed.status).toBe(201);
    await crashAt('secrets.delete.removed', () => call('DELETE', `${base}/${doomed.body.id}`));
    expect((await rows()).find((r) => r.id === doomed.body.id)?.state).toBe('deleting');
    expect(await storeFiles()).not.toContain(`${doomed.body.id}.secret`);

    await spawn();
    await until(
      async () => (await rows()).some((r) => r.id === doomed.body.id),
      (present) => !present,
      CONVERGE_MS,
    );
    expect(await eventsOf(doomed.body.id)).toEqual(['secret.created', 'secret.deleted']);
    expect((await call('GET', `${base}/${doomed.body.id}`)).status).toBe(404);
    await converged();
  });
});

describe('a keyed create retried after SIGKILL', () => {
  for (const [point, when] of [
    ['secrets.create.stored', 'between the store write and the commit'],
    ['secrets.create.committed', 'after the commit, before the answer'],
  ] as const) {
    it(`killed ${when}: the retry with the same Idempotency-Key answers 201, one secret, one store object`, async () => {
      const name = `keyed-${point.split('.').pop()}`;
      const key = { 'idempotency-key': randomUUID() };
      const body = { name, values: { TOKEN: 'v' } };
      await crashAt(point, () => call('POST', base, body, key));
      await spawn();

      // At once, within the reconciler's grace: the retry itself settles what the dead attempt left.
      const retry = await call('POST', base, body, key);
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(retry.body).toMatchObject({ name, keys: ['TOKEN'] });
      const again = await call('POST', base, body, key);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(retry.body);
      expect((await rows()).filter((r) => r.name === name)).toEqual([{ id: retry.body.id, name, state: 'ready' }]);
      expect(await eventsOf(retry.body.id)).toEqual(['secret.created']);
      await converged();
    });
  }
});
