import { readFileSync } from 'node:fs';
import type { DatabasesConfig } from '../config.ts';

/** An S3-compatible object store holding the backup repositories (both adapters). */
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
  /** Each database's repository is `<prefix>/<database id>` in the bucket. */
  prefix: string;
}

/** The configured S3 store, or undefined (docker then keeps backups in a named volume). */
export function s3StoreOf(config: DatabasesConfig): S3Store | undefined {
  if (!config.PIER_DATABASES_BACKUP_S3_ENDPOINT) return undefined;
  const url = new URL(config.PIER_DATABASES_BACKUP_S3_ENDPOINT);
  return {
    host: url.hostname,
    port: Number(url.port || 443),
    bucket: config.PIER_DATABASES_BACKUP_S3_BUCKET!,
    region: config.PIER_DATABASES_BACKUP_S3_REGION,
    accessKeyId: config.PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID!,
    secretAccessKey: config.PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY!,
    caPem: config.PIER_DATABASES_BACKUP_S3_CA_FILE ? readFileSync(config.PIER_DATABASES_BACKUP_S3_CA_FILE, 'utf8') : undefined,
    prefix: config.PIER_DATABASES_BACKUP_S3_PREFIX,
  };
}
