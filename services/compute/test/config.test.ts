import { describe, expect, it } from 'vitest';
import { generateIdentityKeys } from '@pier/kit';
import { readConfig } from '../src/index.ts';

// Configuration is checked at start-up and a bad variable is named.

describe('compute configuration: disk backups on kubernetes', async () => {
  const keys = await generateIdentityKeys();
  const base = {
    PIER_DATABASE_URL: 'postgres://pier_compute:x@127.0.0.1:5432/pier',
    PIER_NATS_URL: 'nats://127.0.0.1:4222',
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
  };
  const store = {
    PIER_COMPUTE_BACKUP_S3_ENDPOINT: 'https://s3.example.com',
    PIER_COMPUTE_BACKUP_S3_BUCKET: 'backups',
    PIER_COMPUTE_BACKUP_S3_ACCESS_KEY_ID: 'AKIA',
    PIER_COMPUTE_BACKUP_S3_SECRET_ACCESS_KEY: 'secret',
  };

  it('takes a method, and refuses the archive one without the store its archives go to', () => {
    expect(readConfig(base).PIER_COMPUTE_DISK_BACKUP_METHOD).toBeUndefined();
    expect(readConfig({ ...base, ...store, PIER_COMPUTE_DISK_BACKUP_METHOD: 'archive' }).PIER_COMPUTE_DISK_BACKUP_METHOD).toBe('archive');
    expect(readConfig({ ...base, PIER_COMPUTE_DISK_BACKUP_METHOD: 'snapshot' }).PIER_COMPUTE_DISK_BACKUP_METHOD).toBe('snapshot');
    expect(() => readConfig({ ...base, PIER_COMPUTE_DISK_BACKUP_METHOD: 'archive' })).toThrow(/PIER_COMPUTE_DISK_BACKUP_METHOD=archive needs the S3 store/);
    expect(() => readConfig({ ...base, PIER_COMPUTE_DISK_BACKUP_METHOD: 'copy' })).toThrow(/PIER_COMPUTE_DISK_BACKUP_METHOD must be snapshot or archive/);
  });

  it('reads the build and edge settings the test cluster prints', () => {
    const c = readConfig({ ...base, PIER_BUILDKIT_ADD_CAPABILITIES: 'SYS_ADMIN', PIER_EDGE_HTTPS_PORT: '10443' });
    expect(c.PIER_BUILDKIT_ADD_CAPABILITIES).toEqual(['SYS_ADMIN']);
    expect(c.PIER_EDGE_HTTPS_PORT).toBe(10443);
    expect(readConfig(base).PIER_BUILDKIT_ADD_CAPABILITIES).toEqual([]);
    expect(() => readConfig({ ...base, PIER_BUILDKIT_ADD_CAPABILITIES: 'sys admin' })).toThrow(/PIER_BUILDKIT_ADD_CAPABILITIES/);
  });
});
