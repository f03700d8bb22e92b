import { s3StoreFromEnv, type S3Store } from '@pier/kit';
import { S3, type DatabasesConfig } from '../config.ts';

export type { S3Store } from '@pier/kit';

/** The configured S3 store (both adapters), or undefined (docker then keeps backups in a named volume). */
export function s3StoreOf(config: DatabasesConfig): S3Store | undefined {
  // Each database's repository is `<prefix>/<database id>` in the bucket.
  return s3StoreFromEnv(S3, config);
}
