import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

/** Where the docker adapter keeps its encrypted files when nothing else is configured. */
export function defaultStoreDir(env: NodeJS.ProcessEnv): string {
  const home = env.PIER_HOME || path.join(os.homedir(), '.local', 'share', 'pier');
  return path.join(home, 'secrets');
}

const storeKey = z.string().refine((v) => Buffer.from(v, 'base64').length === 32 && /^[A-Za-z0-9+/]+={0,2}$/.test(v), {
  message: 'PIER_SECRETS_STORE_KEY must be 32 random bytes, base64-encoded (openssl rand -base64 32)',
});

export const secretsEnv = serviceEnv
  .extend({
    PIER_SECRETS_HTTP_PORT: port(7104),
    PIER_SECRETS_GRPC_PORT: port(7114),
    PIER_CLUSTER: z.enum(['docker', 'kubernetes']).default('docker'),
    /** docker: directory of the encrypted store; defaults under $PIER_HOME (or ~/.local/share/pier). */
    PIER_SECRETS_STORE_DIR: z.string().min(1).optional(),
    /** docker: AES-256-GCM key of the store. Required with the docker cluster. */
    PIER_SECRETS_STORE_KEY: storeKey.optional(),
    /** kubernetes: kubeconfig file; without it the in-cluster service account (or $KUBECONFIG) is used. */
    PIER_KUBECONFIG: z.string().min(1).optional(),
    /**
     * Compute's Ed25519 public JWK. Only compute may call the gRPC methods; without this
     * key every gRPC call is refused.
     */
    PIER_COMPUTE_SERVICE_PUBLIC_KEY: z.string().min(1).optional(),
    /** How often the reconciler looks for records a crash left half-done. */
    PIER_SECRETS_RECONCILE_INTERVAL_SECONDS: z.coerce.number().positive().default(30),
    /**
     * How old a record left `creating` or `deleting` (or a stray temporary file of the docker
     * store) must be before the reconciler takes it for a crash's leftover rather than a
     * request in flight. Well above the store call deadline (10 s).
     */
    PIER_SECRETS_PENDING_GRACE_SECONDS: z.coerce.number().positive().default(60),
    /** How often the reconciler lists the store for objects no record accounts for (and at start-up). */
    PIER_SECRETS_SWEEP_INTERVAL_SECONDS: z.coerce.number().positive('PIER_SECRETS_SWEEP_INTERVAL_SECONDS must be above 0').default(300),
  })
  .superRefine((env, ctx) => {
    if (env.PIER_CLUSTER === 'docker' && !env.PIER_SECRETS_STORE_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['PIER_SECRETS_STORE_KEY'],
        message: 'PIER_SECRETS_STORE_KEY is required with PIER_CLUSTER=docker (32 random bytes, base64)',
      });
    }
  });

export type SecretsConfig = z.infer<typeof secretsEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): SecretsConfig => {
  const config = loadConfig(secretsEnv, env);
  return { ...config, PIER_SECRETS_STORE_DIR: config.PIER_SECRETS_STORE_DIR ?? defaultStoreDir(env) };
};
