import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { AUTH_CACHE_CLOCK_SKEW_MS, AUTH_CACHE_LEASE_MS, serviceEnv, port, loadConfig, millis } from '@pier/kit';

const optionalUrl = (name: string) =>
  z
    .string()
    .url({ message: `${name} must be an http(s) URL` })
    .optional()
    .or(z.literal('').transform(() => undefined));

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v ? v : undefined));

const flag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .default('true')
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Fields of an Ed25519 JWK we rely on; anything else in the JSON is ignored. */
interface OkpJwk {
  kty?: string;
  crv?: string;
  x?: string;
  d?: string;
}

function parseJwk(value: string): OkpJwk | undefined {
  try {
    const jwk = JSON.parse(value) as OkpJwk;
    return typeof jwk === 'object' && jwk !== null ? jwk : undefined;
  } catch {
    return undefined;
  }
}

export const authEnv = serviceEnv
  .extend({
    PIER_IDENTITY_PRIVATE_KEY: z.string().min(1, 'PIER_IDENTITY_PRIVATE_KEY is required (Ed25519 private JWK, JSON)'),
    PIER_AUTH_HTTP_PORT: port(7101),
    PIER_AUTH_GRPC_PORT: port(7111),
    PIER_OIDC_ISSUER: optionalText,
    PIER_OIDC_JWKS_URL: optionalUrl('PIER_OIDC_JWKS_URL'),
    PIER_OIDC_AUDIENCE: optionalText,
    // Not z.email(): it wants a dot in the domain, and the default owner@localhost has none.
    PIER_BOOTSTRAP_EMAIL: z
      .string()
      .regex(/^[^@\s]+@[^@\s]+$/, 'PIER_BOOTSTRAP_EMAIL must be an e-mail address')
      .default('owner@localhost'),
    PIER_CONFIG_DIR: z
      .string()
      .min(1)
      .default(() => path.join(os.homedir(), '.config', 'pier')),
    PIER_PUBLIC_URL: z.string().url({ message: 'PIER_PUBLIC_URL must be the gateway URL, e.g. http://127.0.0.1:7100' }).default('http://127.0.0.1:7100'),
    PIER_BOOTSTRAP: flag,
    // The bootstrap API key itself, when the installer chose it (the Helm chart keeps it in
    // its Secret, so every auth replica and the operator know it); else a new one is made.
    PIER_BOOTSTRAP_API_KEY: z
      .string()
      .regex(/^sk-[0-9a-f]{64}$/, 'PIER_BOOTSTRAP_API_KEY must be an API key: sk- and 64 hexadecimal digits')
      .optional(),
    PIER_COMPUTE_URL: optionalUrl('PIER_COMPUTE_URL'),
    PIER_DATABASES_URL: optionalUrl('PIER_DATABASES_URL'),
    PIER_SECRETS_URL: optionalUrl('PIER_SECRETS_URL'),
    PIER_IDENTITY_TTL_SECONDS: z.coerce.number().int().min(10).max(3600).default(60),
    // The gateways' answer caches (kit's auth-epoch.ts): how long an epoch tick keeps a
    // cache usable, and how far apart clocks may be. A revoke that a cut-off gateway does
    // not acknowledge answers after both. Ticks come every 100 ms: a lease of three at least.
    PIER_AUTH_CACHE_LEASE_MS: millis('PIER_AUTH_CACHE_LEASE_MS', 300, 10_000, AUTH_CACHE_LEASE_MS),
    PIER_AUTH_CACHE_CLOCK_SKEW_MS: millis('PIER_AUTH_CACHE_CLOCK_SKEW_MS', 0, 10_000, AUTH_CACHE_CLOCK_SKEW_MS),
    // The gateway's own Ed25519 public key: Authenticate and RecordUses admit only calls
    // signed with its private half (grpc/auth-service.ts). Unset: both are refused.
    PIER_GATEWAY_SERVICE_PUBLIC_KEY: optionalText,
  })
  .superRefine((env, ctx) => {
    const priv = parseJwk(env.PIER_IDENTITY_PRIVATE_KEY);
    if (!priv || priv.kty !== 'OKP' || priv.crv !== 'Ed25519' || !priv.d || !priv.x) {
      ctx.addIssue({
        code: 'custom',
        path: ['PIER_IDENTITY_PRIVATE_KEY'],
        message: 'must be an Ed25519 private JWK (JSON with kty OKP, crv Ed25519, x and d)',
      });
      return;
    }
    // A private key that does not match the public key every service verifies with would
    // make every request fail with 401; better to refuse to start and say why.
    const pub = parseJwk(env.PIER_IDENTITY_PUBLIC_KEY);
    if (!pub || pub.x !== priv.x) {
      ctx.addIssue({ code: 'custom', path: ['PIER_IDENTITY_PRIVATE_KEY'], message: 'does not match PIER_IDENTITY_PUBLIC_KEY' });
    }
    const oidc = [env.PIER_OIDC_ISSUER, env.PIER_OIDC_JWKS_URL, env.PIER_OIDC_AUDIENCE];
    const set = oidc.filter((v) => v !== undefined).length;
    if (set !== 0 && set !== 3) {
      ctx.addIssue({
        code: 'custom',
        path: ['PIER_OIDC_ISSUER'],
        message: 'set all of PIER_OIDC_ISSUER, PIER_OIDC_JWKS_URL and PIER_OIDC_AUDIENCE, or none of them',
      });
    }
  });

export type AuthConfig = z.infer<typeof authEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): AuthConfig => loadConfig(authEnv, env);
