import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { connect, DeliverPolicy } from 'nats';
import { inject } from 'vitest';
import { generateIdentityKeys, importIdentityKey, signIdentity, SERVICE_ISSUER, type Role } from '@pier/kit';
import { createTestDatabase } from '@pier/testing';
import { readConfig, start, type RunningSecrets, type StartOptions } from '../src/index.ts';

/** The suite's PostgreSQL and NATS (global setup), or containers named in the environment. */
export function infra(): { postgresAdminUrl: string; natsUrl: string } {
  const postgresAdminUrl = safeInject('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL;
  const natsUrl = safeInject('natsUrl') ?? process.env.PIER_TEST_NATS_URL;
  if (!postgresAdminUrl || !natsUrl) throw new Error('no test PostgreSQL/NATS: run under the suite global setup or set PIER_TEST_POSTGRES_URL / PIER_TEST_NATS_URL');
  return { postgresAdminUrl, natsUrl };
}

function safeInject(key: 'postgresAdminUrl' | 'natsUrl'): string | undefined {
  try {
    return inject(key) || undefined;
  } catch {
    return undefined;
  }
}

/** Collects a service's log lines (pino JSON), to search them. */
export class LogCapture extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(chunk.toString());
    cb();
  }
  get text(): string {
    return this.chunks.join('');
  }
}

export const storeKey = () => randomBytes(32).toString('base64');

export interface Harness {
  running: RunningSecrets;
  url: string;
  grpcAddress: string;
  logs: LogCapture;
  db: Awaited<ReturnType<typeof createTestDatabase>>;
  natsUrl: string;
  storeDir: string;
  env: Record<string, string>;
  identityKeys: { privateJwk: string; publicJwk: string };
  computeKeys: { privateJwk: string; publicJwk: string };
  workspaceId: string;
  vpcId: string;
  base: string;
  /** An identity token for this workspace/VPC with the given role. */
  as(role: Role, scope?: { workspaceId: string; vpcId: string }): Promise<string>;
  /** A service identity signed by auth's identity key (not compute's own key). */
  serviceToken(subject: string): Promise<string>;
  restart(env?: Record<string, string>, opts?: StartOptions): Promise<void>;
  stop(): Promise<void>;
}

/** One secrets service on free ports against a fresh database, with its logs captured. */
export async function startSecrets(envOverrides: Record<string, string | undefined> = {}, opts: StartOptions = {}): Promise<Harness> {
  const { postgresAdminUrl, natsUrl } = infra();
  const db = await createTestDatabase(postgresAdminUrl);
  const storeDir = await mkdtemp(path.join(tmpdir(), 'pier-secrets-store-'));
  const identityKeys = await generateIdentityKeys();
  const computeKeys = await generateIdentityKeys();
  const identityKey = await importIdentityKey(identityKeys.privateJwk);
  const logs = new LogCapture();
  const env: Record<string, string> = {
    PIER_DATABASE_URL: db.urls.secrets,
    PIER_NATS_URL: natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: identityKeys.publicJwk,
    PIER_LOG_LEVEL: 'debug',
    PIER_SECRETS_HTTP_PORT: '0',
    PIER_SECRETS_GRPC_PORT: '0',
    PIER_SECRETS_STORE_DIR: path.join(storeDir, 'store'),
    PIER_SECRETS_STORE_KEY: storeKey(),
    PIER_COMPUTE_SERVICE_PUBLIC_KEY: computeKeys.publicJwk,
  };
  // An override of `undefined` removes a variable the harness would set.
  for (const [k, v] of Object.entries(envOverrides)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const workspaceId = crypto.randomUUID();
  const vpcId = crypto.randomUUID();
  const h: Harness = {
    running: undefined as unknown as RunningSecrets,
    url: '',
    grpcAddress: '',
    logs,
    db,
    natsUrl,
    storeDir: env.PIER_SECRETS_STORE_DIR!,
    env,
    identityKeys,
    computeKeys,
    workspaceId,
    vpcId,
    base: `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/secrets`,
    as: (role, scope = { workspaceId, vpcId }) =>
      signIdentity(identityKey, { kind: 'user', subject: crypto.randomUUID(), email: `${role}@example.test`, role, ...scope }, 300),
    serviceToken: (subject) => signIdentity(identityKey, { kind: 'service', subject }, 300),
    async restart(more = {}, restartOpts = opts) {
      await h.running?.stop();
      Object.assign(env, more);
      h.running = await start(readConfig(env), { logDestination: logs, ...restartOpts });
      h.url = `http://127.0.0.1:${h.running.httpPort}`;
      h.grpcAddress = `127.0.0.1:${h.running.grpcPort}`;
    },
    async stop() {
      await h.running?.stop();
      await db.drop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
  try {
    await h.restart({}, opts);
  } catch (err) {
    await db.drop();
    throw err;
  }
  return h;
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
    return (await client.query('select id, name, state, vpc_id from secrets.secrets order by seq')).rows;
  } finally {
    await client.end();
  }
}

export async function adminQuery<T extends pg.QueryResultRow = any>(adminUrl: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Collects the events published under a workspace/VPC prefix from JetStream, from now on. */
export async function collectEvents(natsUrl: string, workspaceId: string, vpcId: string) {
  const nc = await connect({ servers: natsUrl });
  const jsm = await nc.jetstreamManager();
  // The stream exists once any relay connected; make sure before subscribing.
  try {
    await jsm.streams.info('PIER_EVENTS');
  } catch {
    await jsm.streams.add({ name: 'PIER_EVENTS', subjects: ['pier.events.>'] });
  }
  const js = nc.jetstream();
  const consumer = await js.consumers.get('PIER_EVENTS', {
    // One subject, not an array: the NATS here (2.9) predates multi-filter consumers.
    filterSubjects: `pier.events.${workspaceId}.${vpcId}.>`,
    deliver_policy: DeliverPolicy.New,
  });
  const events: { subject: string; raw: string; payload: any }[] = [];
  const messages = await consumer.consume();
  void (async () => {
    for await (const m of messages) {
      const raw = m.string();
      events.push({ subject: m.subject, raw, payload: JSON.parse(raw) });
    }
  })();
  return {
    events,
    async waitFor(kind: string, resourceId: string, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const e = events.find((x) => x.payload.kind === kind && x.payload.resource_id === resourceId);
        if (e) return e;
        if (Date.now() > deadline) throw new Error(`no ${kind} event for ${resourceId} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      await messages.close();
      await nc.close();
    },
  };
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
