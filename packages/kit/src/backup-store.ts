import { readFileSync } from 'node:fs';

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
