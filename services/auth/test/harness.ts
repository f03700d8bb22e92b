import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import request from 'supertest';
import { call, clientConstructor, generateIdentityKeys, grpc, importIdentityKey, signIdentity, IDENTITY_HEADER, type Identity } from '@pier/kit';
import { createTestDatabase } from '@pier/testing';
import { readConfig, start, type RunningAuth } from '../src/index.ts';
import type { AuthenticateResponse } from '../src/domain/authenticate.ts';

/** The suite's PostgreSQL and NATS: from vitest's globalSetup, else from the environment. */
export function infra(): { postgresAdminUrl: string; natsUrl: string } {
  const get = inject as unknown as (key: string) => string | undefined;
  const postgresAdminUrl = get('postgresAdminUrl') ?? process.env.PIER_TEST_POSTGRES_URL;
  const natsUrl = get('natsUrl') ?? process.env.PIER_TEST_NATS_URL;
  if (!postgresAdminUrl || !natsUrl) throw new Error('no test PostgreSQL/NATS: run through vitest globalSetup or set PIER_TEST_POSTGRES_URL and PIER_TEST_NATS_URL');
  return { postgresAdminUrl, natsUrl };
}

export interface AuthHarness {
  auth: RunningAuth;
  url: string;
  configDir: string;
  database: Awaited<ReturnType<typeof createTestDatabase>>;
  keys: { privateJwk: string; publicJwk: string };
  natsUrl: string;
  env: NodeJS.ProcessEnv;
  /** supertest against auth's REST port, carrying an identity minted for `who`. */
  as(who: Partial<Identity> & { subject: string }): Promise<RequestAs>;
  /** The gRPC Authenticate call, as the gateway makes it. */
  authenticate(token: string, workspaceId?: string, vpcId?: string): Promise<AuthenticateResponse>;
  stop(): Promise<void>;
}

type Method = 'get' | 'post' | 'patch' | 'delete' | 'put';
export type RequestAs = Record<Method, (path: string) => request.Test>;

export async function startAuth(extraEnv: NodeJS.ProcessEnv = {}): Promise<AuthHarness> {
  const { postgresAdminUrl, natsUrl } = infra();
  const database = await createTestDatabase(postgresAdminUrl);
  const configDir = path.join(await mkdtemp(path.join(tmpdir(), 'pier-auth-test-')), 'pier');
  const generated = await generateIdentityKeys();
  const env: NodeJS.ProcessEnv = {
    PIER_DATABASE_URL: database.urls.auth,
    PIER_NATS_URL: natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: generated.publicJwk,
    PIER_IDENTITY_PRIVATE_KEY: generated.privateJwk,
    PIER_AUTH_HTTP_PORT: '0',
    PIER_AUTH_GRPC_PORT: '0',
    PIER_CONFIG_DIR: configDir,
    PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'silent',
    ...extraEnv,
  };
  // The caller may bring its own key pair (extraEnv); tests sign with whichever auth uses.
  const keys = { privateJwk: env.PIER_IDENTITY_PRIVATE_KEY!, publicJwk: env.PIER_IDENTITY_PUBLIC_KEY! };
  const privateKey = await importIdentityKey(keys.privateJwk);
  const auth = await start(readConfig(env));
  const Client = clientConstructor('auth.proto', 'auth.v1', 'Auth');
  const client = new Client(`127.0.0.1:${auth.grpcPort}`, grpc.credentials.createInsecure());
  const h: AuthHarness = {
    auth,
    url: `http://127.0.0.1:${auth.httpPort}`,
    configDir,
    database,
    keys,
    natsUrl,
    env,
    async as(who) {
      const token = await signIdentity(privateKey, { kind: 'user', ...who }, 300);
      const make = (method: Method) => (p: string) => request(h.url)[method](p).set(IDENTITY_HEADER, token);
      return { get: make('get'), post: make('post'), patch: make('patch'), delete: make('delete'), put: make('put') };
    },
    authenticate(token, workspaceId = '', vpcId = '') {
      return call<object, AuthenticateResponse>(client, 'Authenticate', { token, workspace_id: workspaceId, vpc_id: vpcId });
    },
    async stop() {
      client.close();
      await auth.stop();
      await database.drop();
      await rm(path.dirname(configDir), { recursive: true, force: true });
    },
  };

  return h;
}
