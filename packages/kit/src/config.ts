import { z } from 'zod';

/**
 * Reads and validates a service's configuration from the environment at start-up, so a
 * missing or malformed variable stops the process with a message naming it, instead of
 * failing on the first request that needs it.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
  throw new Error(`invalid configuration:\n${lines.join('\n')}`);
}

/** Shared pieces of every service's environment. */
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
/** A duration variable in whole milliseconds, `min` to `max`. */
export const millis = (name: string, min: number, max: number, fallback: number) => {
  const message = `${name} must be a whole number of milliseconds, ${min} to ${max}`;
  return z.coerce.number({ message }).int(message).min(min, message).max(max, message).default(fallback);
};
export const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');

/** Defaults of PIER_DATABASE_CONNECT_TIMEOUT_MS and PIER_DATABASE_ACQUIRE_TIMEOUT_MS (kit's createDb). */
export const DATABASE_CONNECT_TIMEOUT_MS = 1500;
export const DATABASE_ACQUIRE_TIMEOUT_MS = 10_000;

/** A graceful stop's times (drain.ts): the gateway's configuration has them too. */
export const shutdownEnv = {
  // 0 locally: nothing routes by readiness there. The Helm chart sets 5000.
  PIER_SHUTDOWN_DELAY_MS: millis('PIER_SHUTDOWN_DELAY_MS', 0, 120_000, 0),
  PIER_SHUTDOWN_GRACE_MS: millis('PIER_SHUTDOWN_GRACE_MS', 0, 600_000, 10_000),
};

/** Variables every Pier service reads. Services extend this with their own. */
export const serviceEnv = z.object({
  PIER_DATABASE_URL: z.string().url({ message: "PIER_DATABASE_URL must be a postgres:// URL (the service role's own login)" }),
  PIER_NATS_URL: z.string().min(1, 'PIER_NATS_URL is required (nats://host:port)'),
  // The service's own NATS user, when NATS has users (kit's nats-connect.ts).
  PIER_NATS_USER: z.string().min(1, 'PIER_NATS_USER must not be empty').optional(),
  PIER_NATS_PASSWORD: z.string().optional(),
  PIER_IDENTITY_PUBLIC_KEY: z.string().min(1, 'PIER_IDENTITY_PUBLIC_KEY is required (Ed25519 public JWK, JSON)'),
  PIER_BIND_HOST: z.string().default('127.0.0.1'),
  PIER_LOG_LEVEL: logLevel,
  PIER_OUTBOX_RETENTION_SECONDS: z.coerce
    .number({ message: 'PIER_OUTBOX_RETENTION_SECONDS must be a number of seconds' })
    .int()
    .min(0, 'PIER_OUTBOX_RETENTION_SECONDS must be 0 or more')
    .default(3600),
  PIER_OUTBOX_PUBLISH_BATCH: z.coerce.number().int().min(1, 'PIER_OUTBOX_PUBLISH_BATCH must be at least 1').max(10_000).default(500),
  PIER_OUTBOX_TRIM_BATCH: z.coerce.number().int().min(1, 'PIER_OUTBOX_TRIM_BATCH must be at least 1').max(100_000).default(5000),
  PIER_DATABASE_CONNECT_TIMEOUT_MS: z.coerce
    .number({ message: 'PIER_DATABASE_CONNECT_TIMEOUT_MS must be a number of milliseconds' })
    .int()
    .min(100, 'PIER_DATABASE_CONNECT_TIMEOUT_MS must be at least 100')
    .max(60_000, 'PIER_DATABASE_CONNECT_TIMEOUT_MS must be at most 60000')
    .default(DATABASE_CONNECT_TIMEOUT_MS),
  PIER_DATABASE_ACQUIRE_TIMEOUT_MS: z.coerce
    .number({ message: 'PIER_DATABASE_ACQUIRE_TIMEOUT_MS must be a number of milliseconds' })
    .int()
    .min(100, 'PIER_DATABASE_ACQUIRE_TIMEOUT_MS must be at least 100')
    .max(600_000, 'PIER_DATABASE_ACQUIRE_TIMEOUT_MS must be at most 600000')
    .default(DATABASE_ACQUIRE_TIMEOUT_MS),
  ...shutdownEnv,
});
