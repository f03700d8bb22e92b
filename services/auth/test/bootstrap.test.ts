import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { generateIdentityKeys } from '@pier/kit';
import { createTestDatabase, infra } from '@pier/testing';
import { readConfig, start, type RunningAuth } from '../src/index.ts';

// Bootstrap on a real database: what the first start creates and writes, what a restart
// leaves alone, and two instances starting at once.

let keys: { privateJwk: string; publicJwk: string };
let tmp: string;
const running: RunningAuth[] = [];
const drops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  keys = await generateIdentityKeys();
  tmp = await mkdtemp(path.join(tmpdir(), 'pier-bootstrap-test-'));
});

afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

afterAll(async () => {
  for (const d of drops) await d();
  await rm(tmp, { recursive: true, force: true });
});

async function freshDatabase() {
  const db = await createTestDatabase(infra().postgresAdminUrl);
  drops.push(db.drop);
  return db;
}

function env(databaseUrl: string, configDir: string, more: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PIER_DATABASE_URL: databaseUrl,
    PIER_NATS_URL: infra().natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
    PIER_AUTH_HTTP_PORT: '0',
    PIER_AUTH_GRPC_PORT: '0',
    PIER_CONFIG_DIR: configDir,
    PIER_PUBLIC_URL: 'http://127.0.0.1:7100',
    PIER_LOG_LEVEL: 'info',
    ...more,
  };
}

async function startLogged(e: NodeJS.ProcessEnv): Promise<{ auth: RunningAuth; logs: () => string }> {
  const sink = new PassThrough();
  let text = '';
  sink.on('data', (chunk) => (text += chunk.toString()));
  const auth = await start(readConfig(e), { logDestination: sink });
  running.push(auth);
  return { auth, logs: () => text };
}

async function counts(adminUrl: string) {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    const { rows } = await c.query(`select
      (select count(*) from auth.users)::int as users,
      (select count(*) from auth.workspaces)::int as workspaces,
      (select count(*) from auth.vpcs)::int as vpcs,
      (select count(*) from auth.api_keys)::int as api_keys`);
    return rows[0];
  } finally {
    await c.end();
  }
}

const mode = async (p: string) => (await stat(p)).mode & 0o777;

describe('bootstrap', () => {
  it('creates the owner, workspace, VPC and key once, and writes the CLI files 0600', async () => {
    const db = await freshDatabase();
    const configDir = path.join(tmp, 'first', 'pier');
    const { auth, logs } = await startLogged(env(db.urls.auth, configDir, { PIER_BOOTSTRAP_EMAIL: 'Boss@Example.com' }));
    const boot = auth.bootstrap!;
    expect(boot.created).toBe(true);
    expect(boot.token).toMatch(/^sk-[0-9a-f]{64}$/);
    expect(boot.credentialsPath).toBe(path.join(configDir, 'credentials.json'));
    expect(boot.configPath).toBe(path.join(configDir, 'config.json'));

    expect(JSON.parse(await readFile(boot.credentialsPath, 'utf8'))).toEqual({ api_url: 'http://127.0.0.1:7100', token: boot.token });
    expect(JSON.parse(await readFile(boot.configPath, 'utf8'))).toEqual({ workspace_id: boot.workspaceId, vpc_id: boot.vpcId });
    expect(await mode(boot.credentialsPath)).toBe(0o600);
    expect(await mode(boot.configPath)).toBe(0o600);
    expect(await mode(configDir)).toBe(0o700);

    expect(await counts(db.adminUrl)).toEqual({ users: 1, workspaces: 1, vpcs: 1, api_keys: 1 });
    const c = new pg.Client({ connectionString: db.adminUrl });
    await c.connect();
    const names = await c.query(`select u.email, w.name as ws, v.name as vpc, k.name as key, m.role
      from auth.users u join auth.memberships m on m.user_id = u.id join auth.workspaces w on w.id = m.workspace_id
      join auth.vpcs v on v.workspace_id = w.id join auth.api_keys k on k.workspace_id = w.id`);
    await c.end();
    expect(names.rows).toEqual([{ email: 'boss@example.com', ws: 'default', vpc: 'default', key: 'bootstrap', role: 'owner' }]);

    // It says where the files are, and never what the key is.
    expect(logs()).toContain(boot.credentialsPath);
    expect(logs()).not.toContain(boot.token!.slice(3));

    // A restart finds the record: nothing new, files untouched, no key in the result.
    const before = await stat(boot.credentialsPath);
    await running.pop()!.stop();
    const again = await startLogged(env(db.urls.auth, configDir));
    expect(again.auth.bootstrap).toMatchObject({ created: false, workspaceId: boot.workspaceId, vpcId: boot.vpcId, credentialsPath: boot.credentialsPath });
    expect(again.auth.bootstrap!.token).toBeUndefined();
    expect(await counts(db.adminUrl)).toEqual({ users: 1, workspaces: 1, vpcs: 1, api_keys: 1 });
    const after = await stat(boot.credentialsPath);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    expect(JSON.parse(await readFile(boot.credentialsPath, 'utf8')).token).toBe(boot.token);
    expect(again.logs()).not.toContain(boot.token!.slice(3));
  });

  it('creates once when two instances start at the same moment', async () => {
    const db = await freshDatabase();
    const configDir = path.join(tmp, 'race', 'pier');
    const [a, b] = await Promise.all([startLogged(env(db.urls.auth, configDir)), startLogged(env(db.urls.auth, configDir))]);
    const created = [a.auth.bootstrap!, b.auth.bootstrap!].filter((x) => x.created);
    expect(created).toHaveLength(1);
    expect(await counts(db.adminUrl)).toEqual({ users: 1, workspaces: 1, vpcs: 1, api_keys: 1 });
    expect(JSON.parse(await readFile(path.join(configDir, 'credentials.json'), 'utf8')).token).toBe(created[0]!.token);
  });

  it('creates the key an installer chose (PIER_BOOTSTRAP_API_KEY), stored only as its hash, and refuses a malformed one', async () => {
    const db = await freshDatabase();
    const chosen = `sk-${'ab12'.repeat(16)}`;
    const configDir = path.join(tmp, 'chosen', 'pier');
    // Two replicas of the chart, both given the key: whichever creates, it is that key.
    const [a, b] = await Promise.all([
      startLogged(env(db.urls.auth, configDir, { PIER_BOOTSTRAP_API_KEY: chosen })),
      startLogged(env(db.urls.auth, configDir, { PIER_BOOTSTRAP_API_KEY: chosen })),
    ]);
    expect([a.auth.bootstrap!, b.auth.bootstrap!].filter((x) => x.created).map((x) => x.token)).toEqual([chosen]);
    const c = new pg.Client({ connectionString: db.adminUrl });
    await c.connect();
    try {
      const { rows } = await c.query(`select key_hash, key_prefix from auth.api_keys`);
      expect(rows).toEqual([{ key_hash: createHash('sha256').update(chosen).digest('hex'), key_prefix: chosen.slice(0, rows[0].key_prefix.length) }]);
    } finally {
      await c.end();
    }
    expect(a.logs() + b.logs()).not.toContain(chosen.slice(3));
    expect(() => readConfig(env(db.urls.auth, configDir, { PIER_BOOTSTRAP_API_KEY: 'sk-short' }))).toThrow(
      /PIER_BOOTSTRAP_API_KEY must be an API key: sk- and 64 hexadecimal digits/,
    );
  });

  it('does nothing with PIER_BOOTSTRAP=false', async () => {
    const db = await freshDatabase();
    const configDir = path.join(tmp, 'off', 'pier');
    const { auth } = await startLogged(env(db.urls.auth, configDir, { PIER_BOOTSTRAP: 'false' }));
    expect(auth.bootstrap).toBeUndefined();
    expect(await counts(db.adminUrl)).toEqual({ users: 0, workspaces: 0, vpcs: 0, api_keys: 0 });
    await expect(stat(configDir)).rejects.toThrow();
  });
});
