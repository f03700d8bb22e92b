// SIGKILL of auth in the middle of its one operation that spans more than a transaction:
// the bootstrap of a first start (the owner, workspace `default`, VPC `default` and API key
// `bootstrap` in one transaction, the CLI's files written before it commits). Every other
// write of auth is a single transaction (a kill commits all of it or none), so nothing else
// can be left half done. Auth runs as its own process; a crash point (PIER_CRASH_AT) kills
// it, and the next start must converge: exactly one of each record, and the files holding
// the one key the database knows.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { adminQuery, createTestDatabase, infra, spawnService, type IdentityKeys, type ServiceProcess, type TestDatabase } from '@pier/testing';

let keys: IdentityKeys;
let tmp: string;
const drops: (() => Promise<void>)[] = [];
const running: ServiceProcess[] = [];

beforeAll(async () => {
  keys = await generateIdentityKeys();
  tmp = await mkdtemp(path.join(tmpdir(), 'pier-auth-sigkill-'));
});

afterAll(async () => {
  for (const p of running) await p.stop();
  for (const d of drops) await d();
  await rm(tmp, { recursive: true, force: true });
}, 60_000);

async function setup(name: string): Promise<{ db: TestDatabase; env: Record<string, string>; credentials: string }> {
  const db = await createTestDatabase(infra().postgresAdminUrl);
  drops.push(db.drop);
  const configDir = path.join(tmp, name, 'pier');
  const env = {
    PIER_DATABASE_URL: db.urls.auth,
    PIER_NATS_URL: infra().natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
    PIER_AUTH_HTTP_PORT: '0',
    PIER_AUTH_GRPC_PORT: '0',
    PIER_CONFIG_DIR: configDir,
    PIER_PUBLIC_URL: 'http://127.0.0.1:7100',
    // spawnService learns the port from the "listening" line.
    PIER_LOG_LEVEL: 'info',
    PIER_CRASH_AT: '',
  };
  return { db, env, credentials: path.join(configDir, 'credentials.json') };
}

/** Bootstrap runs before auth listens: the armed start must die by SIGKILL instead. */
async function crashAt(point: string, env: Record<string, string>): Promise<void> {
  // tsx relays its child's death by SIGKILL as exit status 128 + 9.
  await expect(spawnService('auth', { ...env, PIER_CRASH_AT: point })).rejects.toThrow(/auth exited \((137|SIGKILL)\) before listening/);
}

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const p = await spawnService('auth', env);
  running.push(p);
  return p;
}

const counts = async (db: TestDatabase) =>
  (
    await adminQuery(
      db.adminUrl,
      `select (select count(*) from auth.users)::int as users, (select count(*) from auth.workspaces)::int as workspaces,
        (select count(*) from auth.vpcs)::int as vpcs, (select count(*) from auth.api_keys)::int as api_keys,
        (select count(*) from auth.memberships)::int as memberships`,
    )
  )[0];
const tokenIn = async (file: string) => JSON.parse(await readFile(file, 'utf8')).token as string;
const keyHashes = async (db: TestDatabase) => (await adminQuery(db.adminUrl, 'select key_hash from auth.api_keys')).map((r) => r.key_hash);
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const ONE_OF_EACH = { users: 1, workspaces: 1, vpcs: 1, api_keys: 1, memberships: 1 };

describe('SIGKILL of auth in the middle of the bootstrap', () => {
  it('after the CLI files were written, before the commit: the next start creates it all once and rewrites the files', async () => {
    const { db, env, credentials } = await setup('before-commit');
    await crashAt('auth.bootstrap.files-written', env);
    const stale = await tokenIn(credentials);
    expect(await counts(db)).toEqual({ users: 0, workspaces: 0, vpcs: 0, api_keys: 0, memberships: 0 });

    await start(env);
    expect(await counts(db)).toEqual(ONE_OF_EACH);
    const token = await tokenIn(credentials);
    expect(token).not.toBe(stale);
    // The files hold the one key the database knows; the dead start's key was never anyone's.
    expect(await keyHashes(db)).toEqual([sha256(token)]);
  });

  it('after the commit, before listening: the next start finds the record and leaves the files as they are', async () => {
    const { db, env, credentials } = await setup('after-commit');
    await crashAt('auth.bootstrap.committed', env);
    expect(await counts(db)).toEqual(ONE_OF_EACH);
    const token = await tokenIn(credentials);
    const written = (await stat(credentials)).mtimeMs;

    await start(env);
    expect(await counts(db)).toEqual(ONE_OF_EACH);
    expect(await tokenIn(credentials)).toBe(token);
    expect((await stat(credentials)).mtimeMs).toBe(written);
    expect(await keyHashes(db)).toEqual([sha256(token)]);
  });
});
