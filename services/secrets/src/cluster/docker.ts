import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { crashPoint } from '@pier/kit';
import { describeStoreError } from './errors.ts';
import type { Observation, SecretObjectId, SecretObjectRef, SecretsCluster, SecretValues } from '../domain/cluster-port.ts';

// The docker cluster has no secret store of its own, so this adapter keeps one: a file per
// secret under a directory only the service can enter, each sealed with AES-256-GCM under
// the configured key. Nothing of it lives in our database.
//
//   <root>/vpc-<vpcId>/<secretId>.secret      (dirs 0700, files 0600)
//   file = MAGIC | iv (12 bytes, random per write) | auth tag (16 bytes) | ciphertext
//
// The ciphertext is bound to its VPC and secret id as additional authenticated data, so a
// file copied or renamed to another secret's place fails to open instead of leaking there.

const MAGIC = Buffer.from('PIERSEC1');
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SUFFIX = '.secret';
const TMP_SUFFIX = '.tmp';
const VPC_PREFIX = 'vpc-';
/** Ids become path components; anything but these characters could walk out of the root. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

export class DockerSecretStore implements SecretsCluster {
  readonly kind = 'docker' as const;
  private readonly key: Buffer;

  constructor(
    private readonly root: string,
    keyBase64: string,
  ) {
    this.key = Buffer.from(keyBase64, 'base64');
    if (this.key.length !== 32) throw new Error('the secret store key must be 32 bytes (base64)');
  }

  async ping(): Promise<void> {
    await this.assertRootUsable();
  }

  async observe(id: SecretObjectId): Promise<Observation> {
    const values = await this.read(id);
    return values ? { exists: true, keys: Object.keys(values).sort() } : { exists: false, keys: [] };
  }

  async apply(ref: SecretObjectRef, values: SecretValues): Promise<void> {
    const dir = await this.ensureVpcDir(ref.vpcId);
    const file = this.fileOf(ref);
    const sealed = this.seal(ref, values);
    // Write beside the target and rename over it: a reader sees the old file or the new
    // one, never half of one, and a crash leaves at most a stray temporary file (removeStrays).
    const tmp = path.join(dir, `.${ref.secretId}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`);
    const handle = await fs.open(tmp, 'wx', 0o600);
    try {
      await handle.writeFile(sealed);
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => undefined);
      await fs.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await handle.close();
    // Sealed values on disk under a temporary name: the reconciler's sweep removes the file.
    crashPoint('secrets.store.written');
    try {
      await fs.rename(tmp, file);
    } catch (err) {
      await fs.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await syncDir(dir);
  }

  async read(id: SecretObjectId): Promise<SecretValues | undefined> {
    let data: Buffer;
    try {
      data = await fs.readFile(this.fileOf(id));
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    }
    return this.open(id, data);
  }

  async delete(id: SecretObjectId): Promise<void> {
    try {
      await fs.unlink(this.fileOf(id));
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
      // A missing root is fine only when it is missing; a root that is not a directory
      // means the store is unusable, and saying "deleted" would be a lie.
      await this.assertRootUsable();
      return;
    }
    await syncDir(path.dirname(this.fileOf(id)));
  }

  describeError(err: unknown): string {
    return describeStoreError(err);
  }

  async list(): Promise<SecretObjectId[]> {
    const found: SecretObjectId[] = [];
    for (const dir of await this.vpcDirs()) {
      const vpcId = path.basename(dir).slice(VPC_PREFIX.length);
      for (const f of await this.filesOf(dir)) {
        if (f.endsWith(SUFFIX) && !f.startsWith('.')) found.push({ vpcId, secretId: f.slice(0, -SUFFIX.length) });
      }
    }
    return found;
  }

  async removeStrays(olderThanMs: number): Promise<number> {
    let removed = 0;
    for (const dir of await this.vpcDirs()) {
      for (const f of await this.filesOf(dir)) {
        if (!f.startsWith('.') || !f.endsWith(TMP_SUFFIX)) continue;
        const file = path.join(dir, f);
        try {
          // A write in flight holds its temporary file for milliseconds; only old ones are strays.
          if (Date.now() - (await fs.stat(file)).mtimeMs < olderThanMs) continue;
          await fs.unlink(file);
          removed++;
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw err;
        }
      }
    }
    return removed;
  }

  /** Paths of the VPC directories under the root. */
  private async vpcDirs(): Promise<string[]> {
    try {
      return (await fs.readdir(this.root)).filter((d) => d.startsWith(VPC_PREFIX)).map((d) => path.join(this.root, d));
    } catch (err) {
      if (errno(err) === 'ENOENT') return [];
      throw err;
    }
  }

  /** Names of the entries of one VPC directory; none when it is not one (any more). */
  private async filesOf(dir: string): Promise<string[]> {
    try {
      return await fs.readdir(dir);
    } catch (err) {
      if (errno(err) === 'ENOTDIR' || errno(err) === 'ENOENT') return [];
      throw err;
    }
  }

  private fileOf(id: SecretObjectId): string {
    if (!SAFE_ID.test(id.vpcId) || !SAFE_ID.test(id.secretId)) throw new Error('secret store ids must be plain identifiers');
    return path.join(this.root, `${VPC_PREFIX}${id.vpcId}`, `${id.secretId}${SUFFIX}`);
  }

  private async ensureVpcDir(vpcId: string): Promise<string> {
    const dir = path.dirname(this.fileOf({ vpcId, secretId: 'x' }));
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    // mkdir's mode is filtered by the umask and ignored for directories that already
    // exist; set it outright so the store is never readable by others.
    await fs.chmod(this.root, 0o700);
    await fs.chmod(dir, 0o700);
    return dir;
  }

  private async assertRootUsable(): Promise<void> {
    try {
      const st = await fs.stat(this.root);
      if (!st.isDirectory()) throw new Error(`secret store root ${this.root} is not a directory`);
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
    }
  }

  private aad(id: SecretObjectId): Buffer {
    return Buffer.from(`pier-secret|${id.vpcId}|${id.secretId}`);
  }

  private seal(id: SecretObjectId, values: SecretValues): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(this.aad(id));
    const body = Buffer.concat([cipher.update(JSON.stringify(values), 'utf8'), cipher.final()]);
    return Buffer.concat([MAGIC, iv, cipher.getAuthTag(), body]);
  }

  private open(id: SecretObjectId, data: Buffer): SecretValues {
    const head = MAGIC.length;
    if (data.length < head + IV_BYTES + TAG_BYTES || !data.subarray(0, head).equals(MAGIC)) {
      throw new Error(`secret file for ${id.secretId} is not a Pier secret file`);
    }
    const iv = data.subarray(head, head + IV_BYTES);
    const tag = data.subarray(head + IV_BYTES, head + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(this.aad(id));
    decipher.setAuthTag(tag);
    let plain: string;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(head + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      // Wrong key, or a file altered or moved: refuse rather than hand out garbage.
      throw new Error(`secret file for ${id.secretId} failed authentication (wrong key or altered file)`);
    }
    return JSON.parse(plain) as SecretValues;
  }
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

/** Makes a rename or unlink durable: the directory entry itself must reach the disk. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
