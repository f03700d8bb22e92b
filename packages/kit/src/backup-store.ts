import { readFileSync } from 'node:fs';
import { z, type RefinementCtx } from 'zod';

// The S3-compatible object store that backups go to when one is configured, as both services
// that keep backups see it: the databases (their repositories) and compute (disk archives).
// The images' backup tools (deploy/images: pier-mariadb-lib.sh, pier-pg-lib.sh,
// volume-tools/pier-volume) read it from the same environment variables.

/** An S3-compatible object store holding backups. */
export interface S3Store {
  /** https endpoint's host and port. */
  host: string;
  port: number;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A CA to trust besides the system's (PEM), for a store with a private certificate. */
  caPem?: string;
  /** Where in the bucket this service's backups go (a key prefix, without slashes at its ends). */
  prefix: string;
}

/** A service's settings of its store, as its configuration holds them. */
export interface S3StoreSettings {
  /** `https://host[:port]`. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A PEM file, read once here. */
  caFile?: string;
  prefix: string;
}

export function s3StoreFrom(s: S3StoreSettings): S3Store {
  const url = new URL(s.endpoint);
  return {
    host: url.hostname,
    port: Number(url.port || 443),
    bucket: s.bucket,
    region: s.region,
    accessKeyId: s.accessKeyId,
    secretAccessKey: s.secretAccessKey,
    caPem: s.caFile ? readFileSync(s.caFile, 'utf8') : undefined,
    prefix: s.prefix,
  };
}

type S3OptionalVar = 'ENDPOINT' | 'BUCKET' | 'ACCESS_KEY_ID' | 'SECRET_ACCESS_KEY' | 'CA_FILE';
type S3DefaultedVar = 'REGION' | 'PREFIX';

/** The variables of a service's store: `<P>_ENDPOINT`, `<P>_BUCKET`, `<P>_REGION`, `<P>_ACCESS_KEY_ID`, `<P>_SECRET_ACCESS_KEY`, `<P>_CA_FILE`, `<P>_PREFIX`. */
export type S3StoreEnvShape<P extends string> = { [K in S3OptionalVar as `${P}_${K}`]: z.ZodOptional<z.ZodString> } & {
  [K in S3DefaultedVar as `${P}_${K}`]: z.ZodDefault<z.ZodString>;
};

/**
 * The settings of a service's S3 store, to spread into its environment schema: an https
 * endpoint (the images' tools speak TLS only), the bucket (created by the operator), region,
 * keys, a CA file to trust (a private CA), and the key prefix its backups go under
 * (`keyPrefix` by default). With an endpoint, the bucket and keys are required:
 * checkS3StoreEnv says so.
 */
export function s3StoreEnv<P extends string>(prefix: P, keyPrefix: string): S3StoreEnvShape<P> {
  return {
    [`${prefix}_ENDPOINT`]: z
      .string()
      .regex(/^https:\/\/[^/:]+(:\d+)?\/?$/, `${prefix}_ENDPOINT must be https://host[:port]`)
      .optional(),
    [`${prefix}_BUCKET`]: z.string().min(3, `${prefix}_BUCKET must be a bucket name`).optional(),
    [`${prefix}_REGION`]: z.string().min(1).default('us-east-1'),
    [`${prefix}_ACCESS_KEY_ID`]: z.string().min(1).optional(),
    [`${prefix}_SECRET_ACCESS_KEY`]: z.string().min(1).optional(),
    [`${prefix}_CA_FILE`]: z.string().min(1).optional(),
    [`${prefix}_PREFIX`]: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]*$/, `${prefix}_PREFIX must be one path segment`)
      .default(keyPrefix),
  } as S3StoreEnvShape<P>;
}

const REQUIRED_WITH_ENDPOINT = ['BUCKET', 'ACCESS_KEY_ID', 'SECRET_ACCESS_KEY'] as const;

/** An S3 store is all or nothing: an endpoint without its bucket or keys is a configuration error, named (a superRefine step). */
export function checkS3StoreEnv(prefix: string, env: Record<string, unknown>, ctx: RefinementCtx): void {
  if (!env[`${prefix}_ENDPOINT`]) return;
  for (const name of REQUIRED_WITH_ENDPOINT) {
    const key = `${prefix}_${name}`;
    if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required with ${prefix}_ENDPOINT` });
  }
}

/** The store the parsed settings name, or undefined when no endpoint is set. */
export function s3StoreFromEnv(prefix: string, env: Record<string, unknown>): S3Store | undefined {
  const get = (name: string) => env[`${prefix}_${name}`] as string | undefined;
  const endpoint = get('ENDPOINT');
  if (!endpoint) return undefined;
  return s3StoreFrom({
    endpoint,
    bucket: get('BUCKET')!,
    region: get('REGION')!,
    accessKeyId: get('ACCESS_KEY_ID')!,
    secretAccessKey: get('SECRET_ACCESS_KEY')!,
    caFile: get('CA_FILE'),
    prefix: get('PREFIX')!,
  });
}

/** The environment that points an image's backup tool at the store (the prefix excepted: each tool places its own keys). */
export function s3ToolEnv(s: S3Store): string[] {
  return [
    `PIER_S3_HOST=${s.host}`,
    `PIER_S3_PORT=${s.port}`,
    `PIER_S3_BUCKET=${s.bucket}`,
    `PIER_S3_REGION=${s.region}`,
    `PIER_S3_KEY=${s.accessKeyId}`,
    `PIER_S3_SECRET=${s.secretAccessKey}`,
    ...(s.caPem ? [`PIER_S3_CA_B64=${Buffer.from(s.caPem).toString('base64')}`] : []),
  ];
}
