// The whole backup-and-restore path against a real S3-compatible server instead of the
// repository volume: versitygw (pier/s3-test, built from the Go module proxy) over HTTPS
// with a certificate of its own, which the databases are told to trust. PostgreSQL's WAL
// archive and base backups (pgBackRest) and MariaDB's backups (mariadb-backup through
// rclone) land in the bucket, and restores read them back from there.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineAddress, mysqlCli, psql } from '@pier/testing';
import { databaseChecks, startDatabases, until, type Databases } from './support.ts';
import { startS3Server, type S3Server } from './s3-server.ts';

const BUCKET = 'pier-test-backups';
let h: Databases;
let s3: S3Server;

/** Object keys in the bucket. */
const objects = async () => (await s3.objects.list('')).map((o) => o.key);

let checks: ReturnType<typeof databaseChecks>;
const one = (id: string) => checks.one(id);
const running = (id: string) => checks.running(id);
const externalUrl = (id: string) => checks.externalUrl(id);

async function completedBackup(id: string): Promise<any> {
  const res = await h.post(`${one(id)}/backups`, {});
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return checks.completed(id, res.body.name);
}

beforeAll(async () => {
  s3 = await startS3Server(BUCKET, machineAddress());
  const caFile = path.join(await mkdtemp(path.join(tmpdir(), 'pier-s3-')), 'ca.pem');
  await writeFile(caFile, s3.store.caPem!);
  h = await startDatabases({
    PIER_DATABASES_BACKUP_S3_ENDPOINT: `https://${s3.store.host}:${s3.store.port}`,
    PIER_DATABASES_BACKUP_S3_BUCKET: BUCKET,
    PIER_DATABASES_BACKUP_S3_ACCESS_KEY_ID: s3.store.accessKeyId,
    PIER_DATABASES_BACKUP_S3_SECRET_ACCESS_KEY: s3.store.secretAccessKey,
    PIER_DATABASES_BACKUP_S3_CA_FILE: caFile,
  });
  checks = databaseChecks(h);
}, 120_000);

afterAll(async () => {
  await h?.stop();
  await s3?.stop();
});

describe('backups in an S3-compatible store', () => {
  it('postgresql: the WAL archive and backups go to the bucket, and a point in time comes back from it', async () => {
    const res = await h.post(h.base, { name: 'ledger' });
    const id = res.body.id;
    await running(id);
    const url = await externalUrl(id);
    expect((await psql(url, "create table t (v text); insert into t values ('one')")).code).toBe(0);
    const backup = await completedBackup(id);
    expect(backup.size_bytes).toBeGreaterThan(0);
    expect((await psql(url, "insert into t values ('two')")).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1100));
    const target = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 1100));
    expect((await psql(url, "insert into t values ('three')")).code).toBe(0);

    const keys = await objects();
    expect(keys.some((k) => k.startsWith(`pier-databases/${id}/archive/db/`))).toBe(true);
    expect(keys.some((k) => k.startsWith(`pier-databases/${id}/backup/db/`))).toBe(true);

    const restored = await h.post(`${one(id)}/backups/restore`, { name: 'ledger-then', target_time: target });
    expect(restored.status, JSON.stringify(restored.body)).toBe(202);
    await running(restored.body.id);
    const rows = await psql(await externalUrl(restored.body.id), 'select v from t order by v');
    expect(rows.stdout.trim().split('\n')).toEqual(['one', 'two']);
    // The restored database archives into a place of its own.
    await until(objects, (k) => k.some((key) => key.startsWith(`pier-databases/${restored.body.id}/archive/db/`)), 60_000);
  }, 240_000);

  it('mysql: a backup goes to the bucket and is restored from it', async () => {
    const res = await h.post(h.base, { name: 'shop', engine: 'mysql' });
    const id = res.body.id;
    await running(id);
    const url = await externalUrl(id);
    expect((await mysqlCli(url, "create table t (v varchar(10)); insert into t values ('one')")).code).toBe(0);
    const backup = await completedBackup(id);
    expect(await objects()).toEqual(expect.arrayContaining([`pier-databases/${id}/backups/${backup.name}/backup.mbstream.zst`]));
    expect((await mysqlCli(url, "insert into t values ('two')")).code).toBe(0);

    const restored = await h.post(`${one(id)}/backups/restore`, { name: 'shop-copy', backup_name: backup.name });
    expect(restored.status, JSON.stringify(restored.body)).toBe(202);
    await running(restored.body.id);
    const rows = await mysqlCli(await externalUrl(restored.body.id), 'select v from t');
    expect(rows.stdout.trim()).toBe('one');

    expect((await h.request('DELETE', `${one(id)}/backups/${backup.name}`)).status).toBe(204);
    expect((await objects()).some((k) => k.includes(`/backups/${backup.name}/`))).toBe(false);
  }, 240_000);
});
