/**
 * The whole Pier platform in one process, on free loopback ports, against a fresh
 * database — without vitest, so the benchmark can use it too. Tests import
 * `startPlatform` from './platform.ts', which fills the Postgres and NATS URLs in from
 * vitest's `inject`; see that file for the API.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentityKeys, type RunningService } from '@pier/kit';
import { createTestDatabase, freePort } from '@pier/testing';
import * as gateway from '@pier/gateway';
import * as auth from '@pier/auth';
import * as compute from '@pier/compute';
import * as databases from '@pier/databases';
import * as secrets from '@pier/secrets';
import * as events from '@pier/events';
import { api, type Api } from './api.ts';

/** Environment variables handed to one service, on top of what the harness sets. */
export type EnvOverrides = Record<string, string | undefined>;

export interface PlatformOptions {
  /** Server-level admin URL of a PostgreSQL; a fresh database is created in it. */
  postgresAdminUrl: string;
  /** NATS (JetStream) URL. */
  natsUrl: string;
  /** Per-service environment overrides, e.g. `{ compute: { PIER_COMPUTE_URL: ... }, gateway: { PIER_COMPUTE_URL: wsEcho } }`. */
  env?: Partial<Record<ServiceName | 'gateway', EnvOverrides>>;
  /** E-mail of the bootstrap owner (default: auth's default, `owner@localhost`). */
  bootstrapEmail?: string;
  /** Log level of every service (default `PIER_TEST_LOG_LEVEL` or `warn`). */
  logLevel?: string;
  /** Receives the gateway's log lines (pino JSON), at level `info`, e.g. to check the access log. */
  gatewayLog?: NodeJS.WritableStream;
  /** Receives compute's log lines (pino JSON), at level `info`. */
  computeLog?: NodeJS.WritableStream;
}

export type ServiceName = 'auth' | 'compute' | 'databases' | 'secrets' | 'events';

export interface Platform {
  /** `http://127.0.0.1:<port>` of the gateway; every public path starts with `/api/v1`. */
  gatewayUrl: string;
  /** What auth's first start created, read back from the files it wrote. */
  bootstrap: { token: string; workspaceId: string; vpcId: string; configDir: string; email: string };
  /** Where each started service listens (`authGrpc`, `secretsGrpc` are host:port). */
  serviceUrls: {
    auth: string;
    authGrpc: string;
    compute?: string;
    databases?: string;
    secrets?: string;
    secretsGrpc?: string;
    events?: string;
    /** The gateway's internal port: /metrics, /healthz, /readyz. */
    gatewayMetrics?: string;
  };
  /** Compute's own Ed25519 key pair (it signs its calls to secrets; secrets trusts its public key). */
  computeKeys: { privateJwk: string; publicJwk: string };
  /** The gateway's own Ed25519 key pair (it signs its calls to auth's gRPC; auth trusts its public key). */
  gatewayKeys: { privateJwk: string; publicJwk: string };
  /** The identity key pair (Ed25519 JWKs as JSON): sign identity tokens to call a service directly. */
  keys: { privateJwk: string; publicJwk: string };
  /** The test database: `adminUrl` (superuser, for test set-up such as ageing a key) and each service's own URL. */
  database: { adminUrl: string; urls: Record<ServiceName, string> };
  natsUrl: string;
  /** A small fetch wrapper against the gateway sending `Authorization: Bearer <token>` (none when token is undefined). */
  api(token?: string): Api;
  /** A fetch wrapper against any base URL (for calling a service directly). */
  apiAt(baseUrl: string, headers?: Record<string, string>): Api;
  stop(): Promise<void>;
}

export async function startPlatformAt(opts: PlatformOptions): Promise<Platform> {
  const started: RunningService[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const db = await createTestDatabase(opts.postgresAdminUrl);
    cleanups.push(() => db.drop());
    const configDir = await mkdtemp(path.join(tmpdir(), 'pier-config-'));
    cleanups.push(() => rm(configDir, { recursive: true, force: true }));
    const keys = await generateIdentityKeys();
    const level = opts.logLevel ?? process.env.PIER_TEST_LOG_LEVEL ?? 'warn';
    const env = opts.env ?? {};
    const common = (service: ServiceName) => ({
      PIER_DATABASE_URL: db.urls[service],
      PIER_NATS_URL: opts.natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
      PIER_BIND_HOST: '127.0.0.1',
      PIER_LOG_LEVEL: level,
    });
    const clean = (e: EnvOverrides): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
    const url = (port: number) => `http://127.0.0.1:${port}`;

    // Resource services first (port 0: the kernel picks), so auth can be told where they
    // are: secrets, then compute (which calls secrets over gRPC with its own key), databases.
    const serviceUrls: Platform['serviceUrls'] = { auth: '', authGrpc: '' };
    const computeKeys = await generateIdentityKeys();
    const gatewayKeys = await generateIdentityKeys();
    const secretsDir = path.join(configDir, 'secrets-store');
    const sec = await secrets.start(
      secrets.readConfig(
        clean({
          ...common('secrets'),
          PIER_SECRETS_HTTP_PORT: '0',
          PIER_SECRETS_GRPC_PORT: '0',
          PIER_SECRETS_STORE_DIR: secretsDir,
          PIER_SECRETS_STORE_KEY: randomBytes(32).toString('base64'),
          PIER_COMPUTE_SERVICE_PUBLIC_KEY: computeKeys.publicJwk,
          ...env.secrets,
        }),
      ),
    );
    started.push(sec);
    serviceUrls.secrets = url(sec.httpPort);
    const secretsGrpc = `127.0.0.1:${sec.grpcPort}`;

    // Events, before anything writes one; it reads the suite's shared stream from a
    // minute before its schema was made (other platforms' events land under their workspaces).
    const ev = await events.start(
      events.readConfig(clean({ ...common('events'), PIER_EVENTS_HTTP_PORT: '0', PIER_EVENTS_CONSUME_FROM: 'installed', ...env.events })),
    );
    started.push(ev);
    serviceUrls.events = url(ev.httpPort);

    // Auth starts last (it is told where the others are), but databases asks it about VPCs
    // (a fork into another VPC): its gRPC port is chosen up front.
    const authGrpcPort = await freePort();
    const [cr, dr] = await Promise.allSettled([
      compute.start(
        compute.readConfig(
          clean({
            ...common('compute'),
            PIER_COMPUTE_HTTP_PORT: '0',
            // The edge (one proxy container for the machine) only where a test asks for it.
            PIER_EDGE: 'off',
            PIER_SECRETS_GRPC_URL: secretsGrpc,
            PIER_COMPUTE_SERVICE_PRIVATE_KEY: computeKeys.privateJwk,
            ...(opts.computeLog ? { PIER_LOG_LEVEL: 'info' } : {}),
            ...env.compute,
          }),
        ),
        { logDestination: opts.computeLog },
      ),
      databases.start(
        databases.readConfig(
          clean({ ...common('databases'), PIER_DATABASES_HTTP_PORT: '0', PIER_AUTH_GRPC_URL: `127.0.0.1:${authGrpcPort}`, ...env.databases }),
        ),
      ),
    ]);
    // Both settle before anything is judged, so a failure never leaves the other running unseen.
    for (const r of [cr, dr]) if (r.status === 'fulfilled') started.push(r.value);
    for (const r of [cr, dr]) if (r.status === 'rejected') throw r.reason;
    const c = (cr as PromiseFulfilledResult<RunningService>).value;
    const d = (dr as PromiseFulfilledResult<RunningService>).value;
    serviceUrls.compute = url(c.httpPort);
    serviceUrls.databases = url(d.httpPort);
    serviceUrls.secretsGrpc = secretsGrpc;

    // The gateway's port is chosen up front: auth writes it into credentials.json as api_url.
    const gatewayPort = await freePort();
    const gatewayUrl = url(gatewayPort);
    const email = opts.bootstrapEmail ?? 'owner@localhost';
    const a = await auth.start(
      auth.readConfig(
        clean({
          ...common('auth'),
          PIER_IDENTITY_PRIVATE_KEY: keys.privateJwk,
          PIER_GATEWAY_SERVICE_PUBLIC_KEY: gatewayKeys.publicJwk,
          PIER_AUTH_HTTP_PORT: '0',
          PIER_AUTH_GRPC_PORT: String(authGrpcPort),
          PIER_BOOTSTRAP_EMAIL: opts.bootstrapEmail,
          PIER_CONFIG_DIR: configDir,
          PIER_PUBLIC_URL: gatewayUrl,
          PIER_COMPUTE_URL: serviceUrls.compute,
          PIER_DATABASES_URL: serviceUrls.databases,
          PIER_SECRETS_URL: serviceUrls.secrets,
          ...env.auth,
        }),
      ),
    );
    started.push(a);
    serviceUrls.auth = url(a.httpPort);
    serviceUrls.authGrpc = `127.0.0.1:${a.grpcPort}`;

    const g = await gateway.start(
      gateway.readConfig(
        clean({
          PIER_GATEWAY_PORT: String(gatewayPort),
          PIER_GATEWAY_METRICS_PORT: '0',
          PIER_BIND_HOST: '127.0.0.1',
          PIER_LOG_LEVEL: opts.gatewayLog ? 'info' : level,
          PIER_AUTH_GRPC_URL: serviceUrls.authGrpc,
          PIER_AUTH_URL: serviceUrls.auth,
          PIER_GATEWAY_SERVICE_PRIVATE_KEY: gatewayKeys.privateJwk,
          PIER_NATS_URL: opts.natsUrl,
          PIER_COMPUTE_URL: serviceUrls.compute,
          PIER_DATABASES_URL: serviceUrls.databases,
          PIER_SECRETS_URL: serviceUrls.secrets,
          PIER_EVENTS_URL: serviceUrls.events,
          // Suites poll through one token far faster than any client should; the limits
          // themselves are tested with small values in test/e2e/rate-limits.test.ts.
          PIER_RATE_LIMIT_TOKEN_PER_HOUR: '100000000',
          PIER_RATE_LIMIT_TOKEN_BURST: '100000',
          PIER_RATE_LIMIT_ADDRESS_PER_HOUR: '100000000',
          PIER_RATE_LIMIT_ADDRESS_BURST: '100000',
          ...env.gateway,
        }),
      ),
      { logDestination: opts.gatewayLog },
    );
    started.push(g);
    serviceUrls.gatewayMetrics = url(g.metricsPort);

    // Bootstrap is read back from the files auth wrote: that is what the CLI sees, too.
    const credentials = JSON.parse(await readFile(path.join(configDir, 'credentials.json'), 'utf8')) as { token: string };
    const config = JSON.parse(await readFile(path.join(configDir, 'config.json'), 'utf8')) as { workspace_id: string; vpc_id: string };

    return {
      gatewayUrl,
      bootstrap: { token: credentials.token, workspaceId: config.workspace_id, vpcId: config.vpc_id, configDir, email },
      serviceUrls,
      keys,
      computeKeys,
      gatewayKeys,
      database: { adminUrl: db.adminUrl, urls: db.urls },
      natsUrl: opts.natsUrl,
      api: (token?: string) => api(gatewayUrl, token ? { authorization: `Bearer ${token}` } : {}),
      apiAt: (baseUrl: string, headers: Record<string, string> = {}) => api(baseUrl, headers),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
