import { mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DockerSecretStore } from '../src/cluster/docker.ts';
import { storeKey } from './support.ts';

describe('docker secret store (encrypted files)', () => {
  let dir: string;
  let root: string;
  const key = storeKey();
  const vpcId = crypto.randomUUID();
  const ref = { workspaceId: crypto.randomUUID(), vpcId, secretId: crypto.randomUUID(), name: 'creds' };

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'pier-docker-store-'));
    root = path.join(dir, 'store');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('writes one sealed file per secret, 0600 in 0700 directories, with no plaintext on disk', async () => {
    const store = new DockerSecretStore(root, key);
    const value = 'plaintext-never-on-disk-7f3a';
    await store.apply(ref, { PASSWORD: value, USER: 'app' });

    const file = path.join(root, `vpc-${vpcId}`, `${ref.secretId}.secret`);
    expect((await stat(root)).mode & 0o777).toBe(0o700);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const raw = await readFile(file);
    for (const needle of [value, 'PASSWORD', Buffer.from(value).toString('base64')]) expect(raw.includes(needle)).toBe(false);
    // The write went through a temporary file and a rename; none is left behind.
    expect(await readdir(path.dirname(file))).toEqual([`${ref.secretId}.secret`]);

    expect(await store.read(ref)).toEqual({ PASSWORD: value, USER: 'app' });
    expect(await store.observe(ref)).toEqual({ exists: true, keys: ['PASSWORD', 'USER'] });
    expect(await store.list()).toEqual([{ vpcId, secretId: ref.secretId }]);
  });

  it('uses a fresh IV per write, and apply replaces the values (idempotent)', async () => {
    const store = new DockerSecretStore(root, key);
    const file = path.join(root, `vpc-${vpcId}`, `${ref.secretId}.secret`);
    await store.apply(ref, { A: 'same' });
    const first = await readFile(file);
    await store.apply(ref, { A: 'same' });
    const second = await readFile(file);
    expect(first.equals(second)).toBe(false);
    await store.apply(ref, { B: 'other' });
    expect(await store.read(ref)).toEqual({ B: 'other' });
  });

  it('refuses a file under the wrong key, an altered file, or a file moved to another secret', async () => {
    const store = new DockerSecretStore(root, key);
    await store.apply(ref, { A: 'x' });
    await expect(new DockerSecretStore(root, storeKey()).read(ref)).rejects.toThrow(/failed authentication/);

    const other = { ...ref, secretId: crypto.randomUUID() };
    const dirOf = path.join(root, `vpc-${vpcId}`);
    await rename(path.join(dirOf, `${ref.secretId}.secret`), path.join(dirOf, `${other.secretId}.secret`));
    await expect(store.read(other)).rejects.toThrow(/failed authentication/);

    const file = path.join(dirOf, `${other.secretId}.secret`);
    const raw = await readFile(file);
    raw.writeUInt8(raw.readUInt8(raw.length - 1) ^ 1, raw.length - 1);
    await writeFile(file, raw);
    await expect(store.read(other)).rejects.toThrow(/failed authentication/);
  });

  it('deletes idempotently and reads a missing secret as absent', async () => {
    const store = new DockerSecretStore(root, key);
    expect(await store.read(ref)).toBeUndefined();
    expect(await store.observe(ref)).toEqual({ exists: false, keys: [] });
    await store.delete(ref);
    await store.apply(ref, { A: 'x' });
    await store.delete(ref);
    await store.delete(ref);
    expect(await store.read(ref)).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });

  it('removes temporary files an interrupted write left once older than the grace, never a write in flight', async () => {
    const store = new DockerSecretStore(root, key);
    await store.apply(ref, { K: 'v' });
    const vpcDir = path.join(root, `vpc-${vpcId}`);
    const stray = path.join(vpcDir, `.${crypto.randomUUID()}.0123456789ab.tmp`);
    await writeFile(stray, 'sealed values');
    expect(await store.removeStrays(60_000)).toBe(0); // seconds old: maybe a write in flight
    expect(await readdir(vpcDir)).toContain(path.basename(stray));
    await utimes(stray, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    expect(await store.removeStrays(60_000)).toBe(1);
    expect(await readdir(vpcDir)).toEqual([`${ref.secretId}.secret`]);
    expect(await store.list()).toEqual([{ vpcId, secretId: ref.secretId }]);
  });

  it('fails (does not pretend) when the store directory is unusable', async () => {
    await writeFile(root, 'not a directory');
    const store = new DockerSecretStore(root, key);
    await expect(store.apply(ref, { A: 'x' })).rejects.toThrow();
    await expect(store.delete(ref)).rejects.toThrow();
    await expect(store.list()).rejects.toThrow();
  });

  it('refuses ids that could leave the store directory', async () => {
    const store = new DockerSecretStore(root, key);
    await mkdir(root, { recursive: true });
    await expect(store.apply({ ...ref, secretId: '../escape' }, { A: 'x' })).rejects.toThrow(/plain identifiers/);
    await expect(store.read({ vpcId: '..', secretId: ref.secretId })).rejects.toThrow(/plain identifiers/);
  });

  it('rejects a key that is not 32 bytes', () => {
    expect(() => new DockerSecretStore(root, Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
  });
});
