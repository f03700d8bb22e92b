/**
 * compute on its own, for its service-level tests: a fresh database on the suite's
 * PostgreSQL, the suite's NATS, the real Docker engine (or whatever PIER_CLUSTER says), and
 * identity tokens we sign ourselves with a key compute is configured to trust.
 */
import { inject } from 'vitest';
import Docker from 'dockerode';
import { randomUUID } from 'node:crypto';
import { generateIdentityKeys, importIdentityKey, signIdentity, IDENTITY_HEADER, type Role } from '@pier/kit';
import { createTestDatabase } from '@pier/kit/testing';
import * as secrets from '@pier/secrets';
import { start, readConfig } from '../src/index.ts';

export const TINY_HTTP = 'pier/tiny-http:1';
export const EXITS = 'pier/exits:1';

export function testUrls(): { postgres: string; nats: string } {
  const postgres = (inject('postgresAdminUrl' as never) as string | undefined) ?? process.env.PIER_TEST_POSTGRES_URL;
  const nats = (inject('natsUrl' as never) as string | undefined) ?? process.env.PIER_TEST_NATS_URL;
  if (!postgres || !nats) throw new Error('no test PostgreSQL/NATS: run through vitest.config.ts, or set PIER_TEST_POSTGRES_URL and PIER_TEST_NATS_URL');
  return { postgres, nats };
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Compute {
  url: string;
  workspaceId: string;
  vpcId: string;
  /** Base path of the services API in this workspace/VPC. */
  base: string;
  adminUrl: string;
  /** An identity token for a user of this workspace/VPC with `role`. */
  token(role: Role): Promise<string>;
  request<T = any>(method: string, path: string, body?: unknown, role?: Role): Promise<Response<T>>;
  get<T = any>(path: string, role?: Role): Promise<Response<T>>;
  post<T = any>(path: string, body?: unknown, role?: Role): Promise<Response<T>>;
  stop(): Promise<void>;
}

export type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;
export type IdentityKeys = Awaited<ReturnType<typeof generateIdentityKeys>>;

/**
 * Starts compute on a fresh database (or `shared.db`, dropped by whoever made it) trusting
 * identity tokens of `shared.keys` (or a new key pair).
 */
export async function startCompute(env: Record<string, string> = {}, shared: { db?: TestDatabase; keys?: IdentityKeys } = {}): Promise<Compute> {
  const { postgres, nats } = testUrls();
  const db = shared.db ?? (await createTestDatabase(postgres));
  const keys = shared.keys ?? (await generateIdentityKeys());
  const privateKey = await importIdentityKey(keys.privateJwk);
  const running = await start(
    readConfig({
      PIER_DATABASE_URL: db.urls.compute,
      PIER_NATS_URL: nats,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_COMPUTE_HTTP_PORT: '0',
      PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'warn',
      PIER_COMPUTE_RECONCILE_INTERVAL_MS: '500',
      ...env,
    }),
  );
  const url = `http://127.0.0.1:${running.httpPort}`;
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const tokens = new Map<Role, string>();
  const token = async (role: Role) => {
    if (!tokens.has(role)) tokens.set(role, await signIdentity(privateKey, { kind: 'user', subject: randomUUID(), workspaceId, vpcId, role }, 3600));
    return tokens.get(role)!;
  };
  const request = async (method: string, path: string, body?: unknown, role: Role = 'owner') => {
    const res = await fetch(url + path, {
      method,
      headers: { [IDENTITY_HEADER]: await token(role), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) : undefined, headers: res.headers };
  };
  return {
    url,
    workspaceId,
    vpcId,
    base: `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`,
    adminUrl: db.adminUrl,
    token,
    request,
    get: (path, role) => request('GET', path, undefined, role),
    post: (path, body, role) => request('POST', path, body, role),
    async stop() {
      await running.stop();
      if (!shared.db) await db.drop();
    },
  };
}

/** Polls `read` until `done` holds (or fails with the last value seen). */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 30_000, every = 250): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, every));
    last = await read();
  }
  return last;
}

export const docker = new Docker();

/** Every container compute made in this VPC (they carry `pier.managed=true`). */
export function vpcContainers(vpcId: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: JSON.stringify({ label: ['pier.managed=true', `pier.vpc=${vpcId}`] }) });
}

/** Removes what compute made for this VPC: containers, volumes, the network. */
export async function cleanDocker(vpcId: string): Promise<void> {
  for (const c of await vpcContainers(vpcId)) await docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
  const { Volumes } = await docker.listVolumes({ filters: JSON.stringify({ label: ['pier.managed=true', `pier.vpc=${vpcId}`] }) });
  for (const v of Volumes ?? []) await docker.getVolume(v.Name).remove().catch(() => undefined);
  const networks = await docker.listNetworks({ filters: JSON.stringify({ label: ['pier.managed=true', `pier.vpc=${vpcId}`] }) });
  for (const n of networks) await docker.getNetwork(n.Id).remove().catch(() => undefined);
}

/**
 * The real secrets service beside compute, trusting compute's own key: what compute's
 * secret-reference tests need. `clusterEnv` chooses the secrets store (docker or kubernetes).
 */
export async function startSecretsFor(
  db: TestDatabase,
  keys: IdentityKeys,
  clusterEnv: Record<string, string>,
): Promise<{ service: Awaited<ReturnType<typeof secrets.start>>; computeEnv: Record<string, string> }> {
  const computeKeys = await generateIdentityKeys();
  const service = await secrets.start(
    secrets.readConfig({
      PIER_DATABASE_URL: db.urls.secrets,
      PIER_NATS_URL: testUrls().nats,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_SECRETS_HTTP_PORT: '0',
      PIER_SECRETS_GRPC_PORT: '0',
      PIER_COMPUTE_SERVICE_PUBLIC_KEY: computeKeys.publicJwk,
      PIER_LOG_LEVEL: 'warn',
      ...clusterEnv,
    }),
  );
  // What compute needs to call it: where, and the key it signs its calls with.
  const computeEnv = { PIER_SECRETS_GRPC_URL: `127.0.0.1:${service.grpcPort}`, PIER_COMPUTE_SERVICE_PRIVATE_KEY: computeKeys.privateJwk };
  return { service, computeEnv };
}
