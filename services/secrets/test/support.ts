import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { expect } from 'vitest';
import { generateIdentityKeys, IDENTITY_HEADER, importIdentityKey, signIdentity, SERVICE_ISSUER } from '@pier/kit';
import { adminQuery, startServiceUnderTest, type IdentityKeys, type ServiceUnderTest } from '@pier/testing';
import { readConfig, start, type RunningSecrets, type StartOptions } from '../src/index.ts';

export { adminQuery, collectEvents, infra } from '@pier/testing';

/** A key for the docker adapter's AES-256-GCM store. */
export const storeKey = () => randomBytes(32).toString('base64');

export interface Harness extends ServiceUnderTest<RunningSecrets> {
  /** host:port of its gRPC server (as compute dials it). */
  readonly grpcAddress: string;
  storeDir: string;
  /** compute's own key pair: secrets trusts the public half for gRPC calls. */
  computeKeys: IdentityKeys;
  base: string;
  /** A service identity signed by auth's identity key (not compute's own key). */
  serviceToken(subject: string): Promise<string>;
}

/** One secrets service on free ports against a fresh database, with its logs captured. */
export async function startSecrets(envOverrides: Record<string, string | undefined> = {}, opts: StartOptions = {}): Promise<Harness> {
  const storeDir = await mkdtemp(path.join(tmpdir(), 'pier-secrets-store-'));
  const computeKeys = await generateIdentityKeys();
  const h = await startServiceUnderTest({
    schema: 'secrets',
    start: (env, logs) => start(readConfig(env), { logDestination: logs, ...opts }),
    env: {
      PIER_LOG_LEVEL: 'debug',
      PIER_SECRETS_HTTP_PORT: '0',
      PIER_SECRETS_GRPC_PORT: '0',
      PIER_SECRETS_STORE_DIR: path.join(storeDir, 'store'),
      PIER_SECRETS_STORE_KEY: storeKey(),
      PIER_COMPUTE_SERVICE_PUBLIC_KEY: computeKeys.publicJwk,
      ...envOverrides,
    },
  });
  const identityKey = await importIdentityKey(h.keys.privateJwk);
  const stop = h.stop;
  return Object.assign(h, {
    get grpcAddress() {
      return `127.0.0.1:${h.running.grpcPort}`;
    },
    storeDir: h.env.PIER_SECRETS_STORE_DIR ?? '',
    computeKeys,
    base: `/api/v1/workspaces/${h.workspaceId}/vpcs/${h.vpcId}/secrets`,
    serviceToken: (subject: string) => signIdentity(identityKey, { kind: 'service', subject }, 300),
    async stop() {
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  });
}

/** Compute's own token (its Ed25519 key, issuer pier-service) as SecretsClient would send. */
export async function computeToken(privateJwk: string, subject = 'compute'): Promise<string> {
  return signIdentity(await importIdentityKey(privateJwk), { kind: 'service', subject }, 60, SERVICE_ISSUER);
}

/** Every encoding a leaked value could take in a text dump: as is, base64, hex (bytea). */
export function encodingsOf(value: string): string[] {
  const b = Buffer.from(value, 'utf8');
  return [value, b.toString('base64'), b.toString('hex')];
}

/**
 * Searches every row of every table (views excluded, system catalogs included) of every
 * schema of the database for any of the needles, each row rendered whole as text so every
 * column is covered. Returns `schema.table` of each table where one was found.
 */
export async function findInDatabase(adminUrl: string, needles: string[]): Promise<string[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ schema: string; name: string }>(
      `select n.nspname as schema, c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where c.relkind in ('r', 'p', 'm')`,
    );
    if (tables.length < 50) throw new Error('expected the system catalogs among the tables searched');
    const hits: string[] = [];
    const patterns = needles.map((n) => `%${n.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    for (const t of tables) {
      const sql = `select count(*)::int as n from ${pg.escapeIdentifier(t.schema)}.${pg.escapeIdentifier(t.name)} r where r::text like any($1)`;
      const { rows } = await client.query<{ n: number }>(sql, [patterns]);
      if (rows[0]!.n > 0) hits.push(`${t.schema}.${t.name}`);
    }
    return hits;
  } finally {
    await client.end();
  }
}

/** Rows of every state, straight from the table (pending ones included). */
export async function secretRows(adminUrl: string): Promise<{ id: string; name: string; state: string; vpc_id: string }[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query('select id, name, state, vpc_id from secrets.secrets order by created_at, id')).rows;
  } finally {
    await client.end();
  }
}

/**
 * With its API server unreachable (the harness restarted on `unreachableKubeconfig`), a
 * create is 503 `cluster_unavailable` and writes nothing: no row, no event, no object in
 * the store (`storeCount`). Back on `kubeconfig`, the same create succeeds and adds one.
 */
export async function expectUnreachableStoreWritesNothing(
  h: Harness,
  unreachableKubeconfig: string,
  kubeconfig: string,
  storeCount: () => Promise<number>,
): Promise<void> {
  const create = async () =>
    request(h.url)
      .post(h.base)
      .set(IDENTITY_HEADER, await h.token('admin'))
      .send({ name: 'unreachable', values: { K: 'v' } });
  const outbox = () => adminQuery(h.db.adminUrl, 'select count(*)::int as n from secrets.outbox');
  const rowsBefore = await secretRows(h.db.adminUrl);
  const outboxBefore = await outbox();
  const storedBefore = await storeCount();
  await h.restart({ PIER_KUBECONFIG: unreachableKubeconfig });
  try {
    const res = await create();
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "the cluster's secret store cannot be reached; nothing was written", code: 'cluster_unavailable' });
    expect(await secretRows(h.db.adminUrl)).toEqual(rowsBefore);
    expect(await outbox()).toEqual(outboxBefore);
    expect(await storeCount()).toBe(storedBefore);
  } finally {
    await h.restart({ PIER_KUBECONFIG: kubeconfig });
  }
  expect((await create()).status).toBe(201);
  expect(await storeCount()).toBe(storedBefore + 1);
}
