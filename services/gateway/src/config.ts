import { z } from 'zod';
import { AUTH_CACHE_LEASE_MS, loadConfig, logLevel, millis, port, shutdownEnv } from '@pier/kit';
import { AUTH_RECONNECT_MAX_MS, AUTH_TIMEOUT_MS } from './auth-client.ts';

const url = (name: string) => z.string().url({ message: `${name} must be an http:// URL` });
// An empty variable means "not set": shells and compose files often export NAME= .
const count = (name: string, unit: string, fallback: number) => {
  const message = `${name} must be a whole number of ${unit}, at least 1`;
  return z.coerce.number({ message }).int(message).min(1, message).max(100_000_000, `${name} must be at most 100000000`).default(fallback);
};
const optionalUrl = (name: string) => z.preprocess((v) => (v === '' ? undefined : v), url(name).optional());

/**
 * The gateway holds no state and no database: it needs where auth answers gRPC and where
 * each service serves HTTP. A service whose URL is unset is simply not routed, so a
 * deployment can grow service by service.
 */
export const gatewayEnv = z.object({
  PIER_GATEWAY_PORT: port(7100),
  // /metrics, /healthz and /readyz, for the platform's operators: never the public port.
  PIER_GATEWAY_METRICS_PORT: port(7109),
  PIER_BIND_HOST: z.string().default('127.0.0.1'),
  PIER_LOG_LEVEL: logLevel,
  PIER_AUTH_GRPC_URL: z.string().regex(/^[^\s/]+:\d+$/, "PIER_AUTH_GRPC_URL must be host:port of auth's gRPC server"),
  PIER_AUTH_URL: url('PIER_AUTH_URL'),
  // The gateway's own Ed25519 private key: it signs its calls to auth's gRPC with it, and
  // auth admits no other caller to Authenticate (auth's PIER_GATEWAY_SERVICE_PUBLIC_KEY).
  PIER_GATEWAY_SERVICE_PRIVATE_KEY: z
    .string({ message: 'PIER_GATEWAY_SERVICE_PRIVATE_KEY is required (the gateway signs its calls to auth with it)' })
    .min(1, 'PIER_GATEWAY_SERVICE_PRIVATE_KEY is required (the gateway signs its calls to auth with it)'),
  // The cache of auth's answers (answer-cache.ts) follows auth's epoch over NATS; without
  // a NATS URL, or with PIER_AUTH_CACHE=off, auth is asked on every request.
  PIER_NATS_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  PIER_NATS_USER: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  PIER_NATS_PASSWORD: z.string().optional(),
  // The longest lease the gateway takes from an epoch tick, whatever the tick says: a tick
  // forged by anything that may publish on NATS cannot keep answers alive longer than this.
  PIER_AUTH_CACHE_MAX_LEASE_MS: millis('PIER_AUTH_CACHE_MAX_LEASE_MS', 100, 10_000, AUTH_CACHE_LEASE_MS),
  PIER_AUTH_CACHE: z.enum(['on', 'off'], { message: 'PIER_AUTH_CACHE must be on or off' }).default('on'),
  PIER_COMPUTE_URL: optionalUrl('PIER_COMPUTE_URL'),
  PIER_DATABASES_URL: optionalUrl('PIER_DATABASES_URL'),
  PIER_SECRETS_URL: optionalUrl('PIER_SECRETS_URL'),
  PIER_EVENTS_URL: optionalUrl('PIER_EVENTS_URL'),
  // Rate limits: a bucket per bearer token, and one per source address for requests
  // without a token auth accepted. GitHub allows 5000 requests an hour per token, Heroku 4500.
  PIER_RATE_LIMIT_TOKEN_PER_HOUR: count('PIER_RATE_LIMIT_TOKEN_PER_HOUR', 'requests per hour', 5000),
  PIER_RATE_LIMIT_TOKEN_BURST: count('PIER_RATE_LIMIT_TOKEN_BURST', 'requests', 100),
  PIER_RATE_LIMIT_ADDRESS_PER_HOUR: count('PIER_RATE_LIMIT_ADDRESS_PER_HOUR', 'requests per hour', 1000),
  PIER_RATE_LIMIT_ADDRESS_BURST: count('PIER_RATE_LIMIT_ADDRESS_BURST', 'requests', 60),
  // Faults: how long auth and the services may take before the client is told so.
  // Authenticate takes about a millisecond; a hung auth is a 503 within a second.
  PIER_AUTH_TIMEOUT_MS: millis('PIER_AUTH_TIMEOUT_MS', 50, 60_000, AUTH_TIMEOUT_MS),
  // After auth drops, the gRPC channel retries at most this far apart (grpc-js would back
  // off up to 120 s): recovery comes at most about this long after auth is back.
  PIER_AUTH_RECONNECT_MAX_MS: millis('PIER_AUTH_RECONNECT_MAX_MS', 100, 120_000, AUTH_RECONNECT_MAX_MS),
  // Longest silence from a service (no byte of its answer): 504 before its headers, the
  // response cut after them. Server-sent event streams and WebSockets are exempt.
  PIER_UPSTREAM_TIMEOUT_MS: millis('PIER_UPSTREAM_TIMEOUT_MS', 100, 3_600_000, 30_000),
  // The built web console, served at / (http/console.ts): packages/console/dist by default
  // (where `./pier up` builds it, and where the platform image keeps it); `off` serves none.
  PIER_CONSOLE_DIR: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  // The console's sign-in with the identity provider (http/console-sign-in.ts): the issuer
  // and audience auth already checks JWTs against; the client id defaults to the audience.
  PIER_OIDC_ISSUER: z.preprocess((v) => (v === '' ? undefined : v), z.url({ message: 'PIER_OIDC_ISSUER must be a URL' }).optional()),
  PIER_OIDC_AUDIENCE: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  PIER_OIDC_CLIENT_ID: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  PIER_OIDC_PROVIDER_NAME: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().max(60, 'PIER_OIDC_PROVIDER_NAME must be at most 60 characters').optional(),
  ),
  PIER_OIDC_SCOPES: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  ...shutdownEnv,
  PIER_TRUSTED_PROXY_HOPS: z.coerce
    .number({ message: 'PIER_TRUSTED_PROXY_HOPS must be a whole number of proxies' })
    .int('PIER_TRUSTED_PROXY_HOPS must be a whole number of proxies')
    .min(0, 'PIER_TRUSTED_PROXY_HOPS must be 0 to 10')
    .max(10, 'PIER_TRUSTED_PROXY_HOPS must be 0 to 10')
    .default(0),
});

export type GatewayConfig = z.infer<typeof gatewayEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): GatewayConfig => loadConfig(gatewayEnv, env);
