/**
 * A second auth instance and a second gateway in front of it, on the same database and
 * NATS as a running platform: how a test sees what a change made through one gateway does
 * to the very next request through another (the gateway's answer cache).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '@pier/testing';
import * as gateway from '@pier/gateway';
import * as auth from '@pier/auth';
import type { Platform } from './platform-core.ts';

export interface SecondFront {
  gatewayUrl: string;
  /** The second gateway's /metrics, /healthz and /readyz. */
  gatewayMetricsUrl: string;
  stop(): Promise<void>;
}

/** `gatewayNatsUrl` replaces the second gateway's NATS URL (a socket link, to cut it). */
export async function startSecondFront(p: Platform, opts: { gatewayNatsUrl?: string } = {}): Promise<SecondFront> {
  const configDir = await mkdtemp(path.join(tmpdir(), 'pier-config-'));
  const grpcPort = await freePort();
  const a = await auth.start(
    auth.readConfig({
      PIER_DATABASE_URL: p.database.urls.auth,
      PIER_NATS_URL: p.natsUrl,
      PIER_IDENTITY_PUBLIC_KEY: p.keys.publicJwk,
      PIER_IDENTITY_PRIVATE_KEY: p.keys.privateJwk,
      PIER_GATEWAY_SERVICE_PUBLIC_KEY: p.gatewayKeys.publicJwk,
      PIER_BIND_HOST: '127.0.0.1',
      PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'warn',
      PIER_AUTH_HTTP_PORT: '0',
      PIER_AUTH_GRPC_PORT: String(grpcPort),
      PIER_BOOTSTRAP: 'false',
      PIER_CONFIG_DIR: configDir,
      PIER_PUBLIC_URL: p.gatewayUrl,
      PIER_COMPUTE_URL: p.serviceUrls.compute,
      PIER_DATABASES_URL: p.serviceUrls.databases,
      PIER_SECRETS_URL: p.serviceUrls.secrets,
    }),
  );
  try {
    const g = await gateway.start(
      gateway.readConfig({
        PIER_GATEWAY_PORT: '0',
        PIER_GATEWAY_METRICS_PORT: '0',
        PIER_BIND_HOST: '127.0.0.1',
        PIER_LOG_LEVEL: process.env.PIER_TEST_LOG_LEVEL ?? 'warn',
        PIER_AUTH_GRPC_URL: `127.0.0.1:${grpcPort}`,
        PIER_AUTH_URL: `http://127.0.0.1:${a.httpPort}`,
        PIER_GATEWAY_SERVICE_PRIVATE_KEY: p.gatewayKeys.privateJwk,
        PIER_NATS_URL: opts.gatewayNatsUrl ?? p.natsUrl,
        PIER_COMPUTE_URL: p.serviceUrls.compute,
        PIER_DATABASES_URL: p.serviceUrls.databases,
        PIER_SECRETS_URL: p.serviceUrls.secrets,
        PIER_RATE_LIMIT_TOKEN_PER_HOUR: '100000000',
        PIER_RATE_LIMIT_TOKEN_BURST: '100000',
        PIER_RATE_LIMIT_ADDRESS_PER_HOUR: '100000000',
        PIER_RATE_LIMIT_ADDRESS_BURST: '100000',
      }),
    );
    return {
      gatewayUrl: `http://127.0.0.1:${g.httpPort}`,
      gatewayMetricsUrl: `http://127.0.0.1:${g.metricsPort}`,
      stop: async () => {
        await g.stop();
        await a.stop();
        await rm(configDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await a.stop();
    await rm(configDir, { recursive: true, force: true });
    throw err;
  }
}
