import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import {
  call,
  clientConstructor,
  generateIdentityKeys,
  grpc,
  importIdentityKey,
  ServiceTokenSigner,
  signIdentity,
  IDENTITY_HEADER,
  type Identity,
} from '@pier/kit';
import { startServiceUnderTest, type ServiceUnderTest } from '@pier/testing';
import { readConfig, start, type RunningAuth } from '../src/index.ts';
import type { AuthenticateResponse } from '../src/domain/authenticate.ts';

export interface AuthHarness extends ServiceUnderTest<RunningAuth> {
  configDir: string;
  /** The gateway's key pair auth was started with: its tokens are the only ones Authenticate admits. */
  gatewayKeys: { privateJwk: string; publicJwk: string };
  /** supertest against auth's REST port, carrying an identity minted for `who`. */
  as(who: Partial<Identity> & { subject: string }): Promise<RequestAs>;
  /** The gRPC Authenticate call, as the gateway makes it. */
  authenticate(token: string, workspaceId?: string, vpcId?: string): Promise<AuthenticateResponse>;
  /** The gRPC FindVpc call, as a resource service makes it on a caller's behalf. */
  findVpc(identityToken: string, vpcId: string): Promise<{ found: boolean }>;
}

type Method = 'get' | 'post' | 'patch' | 'delete' | 'put';
export type RequestAs = Record<Method, (path: string) => request.Test>;

/** auth on the shared harness, bootstrapping into a fresh config directory, with a gRPC client. */
export async function startAuth(extraEnv: Record<string, string> = {}): Promise<AuthHarness> {
  const configDir = path.join(await mkdtemp(path.join(tmpdir(), 'pier-auth-test-')), 'pier');
  // The caller may bring its own key pair; auth signs with its private half, services trust the public one.
  const keys = extraEnv.PIER_IDENTITY_PRIVATE_KEY
    ? { privateJwk: extraEnv.PIER_IDENTITY_PRIVATE_KEY, publicJwk: extraEnv.PIER_IDENTITY_PUBLIC_KEY! }
    : await generateIdentityKeys();
  const gatewayKeys = await generateIdentityKeys();
  const h = await startServiceUnderTest({
    schema: 'auth',
    // auth signs identity tokens with the private half of the pair the harness trusts.
    start: (env, logs) => start(readConfig({ PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk, ...env }), { logDestination: logs }),
    env: {
      PIER_AUTH_HTTP_PORT: '0',
      PIER_AUTH_GRPC_PORT: '0',
      PIER_CONFIG_DIR: configDir,
      PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'silent',
      PIER_GATEWAY_SERVICE_PUBLIC_KEY: gatewayKeys.publicJwk,
      ...extraEnv,
    },
    keys,
  });
  const privateKey = await importIdentityKey(h.keys.privateJwk);
  const Client = clientConstructor('auth.proto', 'auth.v1', 'Auth');
  const client = new Client(`127.0.0.1:${h.running.grpcPort}`, grpc.credentials.createInsecure());
  const gateway = new ServiceTokenSigner(gatewayKeys.privateJwk, 'gateway');
  const stop = h.stop;
  return Object.assign(h, {
    configDir,
    gatewayKeys,
    async as(who: Partial<Identity> & { subject: string }): Promise<RequestAs> {
      const token = await signIdentity(privateKey, { kind: 'user', ...who }, 300);
      const make = (method: Method) => (p: string) => request(h.url)[method](p).set(IDENTITY_HEADER, token);
      return { get: make('get'), post: make('post'), patch: make('patch'), delete: make('delete'), put: make('put') };
    },
    async authenticate(token: string, workspaceId = '', vpcId = '') {
      return call<object, AuthenticateResponse>(client, 'Authenticate', { token, workspace_id: workspaceId, vpc_id: vpcId }, await gateway.metadata());
    },
    findVpc(identityToken: string, vpcId: string) {
      return call<object, { found: boolean }>(client, 'FindVpc', { identity_token: identityToken, vpc_id: vpcId });
    },
    async stop() {
      client.close();
      await stop();
      await rm(path.dirname(configDir), { recursive: true, force: true });
    },
  });
}
