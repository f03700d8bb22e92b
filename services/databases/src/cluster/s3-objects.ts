import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { S3Store } from './backup-store.ts';

// The backup bucket as the control plane sees it. The operators write backups but never
// delete them (CloudNativePG leaves the data when a Backup object goes, MOCO never deletes),
// so removing a backup or a deleted database's repository is done here, object by object.

export interface StoredObject {
  key: string;
  lastModified: Date | null;
}

/** S3's DeleteObjects takes at most this many keys per call. */
const DELETE_BATCH = 1000;

export class S3Objects {
  private readonly client: S3Client;

  constructor(private readonly store: S3Store) {
    this.client = new S3Client({
      endpoint: `https://${store.host}:${store.port}`,
      region: store.region,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
      // S3-compatible stores (MinIO, Ceph, versitygw) are addressed by path, not by a bucket host name.
      forcePathStyle: true,
      requestHandler: {
        // A store out of reach fails a request in seconds (a 503 to the caller), not minutes.
        connectionTimeout: 5_000,
        requestTimeout: 60_000,
        // A private CA is trusted besides the system's, not instead of them.
        ...(store.caPem ? { httpsAgent: new https.Agent({ ca: [...rootCertificates, store.caPem], keepAlive: true }) } : {}),
      },
    });
  }

  get bucket(): string {
    return this.store.bucket;
  }

  /** Every object under `prefix` (which should end in `/`), following S3's pages. */
  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.store.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) out.push({ key: o.Key, lastModified: o.LastModified ?? null });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /** The "directories" right under `prefix`. */
  async children(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.store.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token }));
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) out.push(p.Prefix.slice(prefix.length).replace(/\/$/, ''));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /** An object's text, or undefined when there is none. */
  async read(key: string): Promise<string | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.store.bucket, Key: key }));
      return await res.Body?.transformToString('utf8');
    } catch (err) {
      if ((err as { name?: string }).name === 'NoSuchKey' || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) {
        return undefined;
      }
      throw err;
    }
  }

  async write(key: string, body: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.store.bucket, Key: key, Body: body }));
  }

  /** Deletes the keys; ones already gone are not an error (S3 reports no error for them). */
  async remove(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const res = await this.client.send(
        new DeleteObjectsCommand({ Bucket: this.store.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
      );
      const failed = res.Errors ?? [];
      if (failed.length)
        throw new Error(`could not delete ${failed.length} objects, the first ${failed[0]!.Key}: ${failed[0]!.Code} ${failed[0]!.Message ?? ''}`);
    }
  }

  /** Deletes everything under `prefix` (a "directory": it must end in `/`). */
  async removePrefix(prefix: string): Promise<number> {
    if (!prefix.endsWith('/') || prefix === '/') throw new Error(`refusing to delete under "${prefix}": not a directory prefix`);
    const keys = (await this.list(prefix)).map((o) => o.key);
    await this.remove(keys);
    return keys.length;
  }

  close(): void {
    this.client.destroy();
  }
}
