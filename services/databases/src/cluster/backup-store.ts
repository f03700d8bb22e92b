import { s3StoreFrom, type S3Store } from '@pier/kit';
import type { DatabasesConfig } from '../config.ts';

export type { S3Store } from '@pier/kit';

/** The configured S3 store (both adapters), or undefined (docker then keeps backups in a named volume). */
export function s3StoreOf(config: DatabasesConfig): S3Store | undefined {
  if (!config.PIER_DATABASES_BACKUP_S3_ENDPOINT) return undefined;
  // Each database's repository is `<prefix>/<database id>` in the bucket.
  return s3StoreFrom({
    endpoint: config.PIER_DATABASES_BACKUP_S3_ENDPOINT,
    bucket: config.PIER_DATABASES_BACKUP_S3_BUCKET!,
    region: config.PIER_DATABASES_BACKUP_S3_REGION,
    accessKeyId: config.PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID!,
    secretAccessKey: config.PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY!,
    caFile: config.PIER_DATABASES_BACKUP_S3_CA_FILE,
    prefix: config.PIER_DATABASES_BACKUP_S3_PREFIX,
  });
}
