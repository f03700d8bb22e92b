/**
 * The S3 test server (pier/s3-test:1, @pier/testing's startS3TestServer) as the databases'
 * tests use it: the store as the adapters take it, and a client of the bucket.
 */
import { startS3TestServer } from '@pier/testing';
import type { S3Store } from '../src/cluster/backup-store.ts';
import { S3Objects } from '../src/cluster/s3-objects.ts';

export interface S3Server {
  store: S3Store;
  /** A client of the bucket, to put objects where the operators would and to look. */
  objects: S3Objects;
  stop(): Promise<void>;
}

/** See startS3TestServer for `hostname`. */
export async function startS3Server(bucket = 'pier-backups', hostname = '127.0.0.1'): Promise<S3Server> {
  const server = await startS3TestServer(bucket, hostname);
  const { host, port, region, accessKeyId, secretAccessKey, caPem } = server;
  const store: S3Store = { host, port, bucket, region, accessKeyId, secretAccessKey, caPem, prefix: 'pier/databases' };
  const objects = new S3Objects(store);
  return {
    store,
    objects,
    async stop() {
      objects.close();
      await server.stop();
    },
  };
}
