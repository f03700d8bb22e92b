// The backup rules that need no database: names, the default schedule, schedule
// validation, target times, the recovery window, and how the docker adapter reads the
// images' `pier-backup list` and a server's health output.
import { describe, expect, it } from 'vitest';
import type Docker from 'dockerode';
import { backupNameAt, defaultSchedule, type BackupRecord } from '../src/domain/backup-records.ts';
import { resolveSchedule } from '../src/domain/backup-schedule.ts';
import { parseTargetTime } from '../src/domain/restore.ts';
import { recoveryWindow } from '../src/domain/backups.ts';
import type { RepositoryListing } from '../src/domain/cluster-port.ts';
import type { DatabaseRecord } from '../src/domain/database.ts';
import { parseMysqlListing, parsePostgresListing } from '../src/cluster/docker-backups.ts';
import { observeParts } from '../src/cluster/docker-observe.ts';
import { fieldOf } from './support.ts';

describe('names and schedules', () => {
  it('names a backup for its start time in UTC', () => {
    expect(backupNameAt(new Date('2026-11-25T06:16:43.123Z'))).toBe('20261125-061643');
  });

  it('spreads default schedules over 00:00-05:59 UTC, the same for a database every time', () => {
    const ids = ['00000000-0000-4000-8000-000000000000', 'ffffffff-ffff-4fff-bfff-ffffffffffff', '3b9f1c2e-7d44-4a1b-9c3e-2f7a9e1d0b55'];
    for (const id of ids) {
      const [minute, hour, ...rest] = defaultSchedule(id).split(' ');
      expect(Number(minute)).toBeLessThan(60);
      expect(Number(hour)).toBeLessThan(6);
      expect(rest).toEqual(['*', '*', '*']);
      expect(defaultSchedule(id)).toBe(defaultSchedule(id));
    }
    expect(new Set(ids.map(defaultSchedule)).size).toBe(3);
  });

  it('validates a schedule change field by field and computes the next run', () => {
    const now = new Date('2026-01-01T10:07:00Z');
    const current = { databaseId: 'd', schedule: '0 3 * * *', retentionCount: 7, enabled: true, nextRunAt: null };
    expect(resolveSchedule(current, { schedule: '*/15 * * * *' }, now)).toEqual({
      ...current,
      schedule: '*/15 * * * *',
      nextRunAt: new Date('2026-01-01T10:15:00Z'),
    });
    expect(resolveSchedule(current, { enabled: false }, now)).toMatchObject({ enabled: false, nextRunAt: null });
    expect(resolveSchedule(current, { schedule: '@daily' }, now).nextRunAt).toEqual(new Date('2026-01-02T00:00:00Z'));
    expect(fieldOf(() => resolveSchedule(current, { schedule: '0 3 * *' }, now))).toBe('schedule');
    expect(fieldOf(() => resolveSchedule(current, { schedule: '0 25 * * *' }, now))).toBe('schedule');
    expect(fieldOf(() => resolveSchedule(current, { retention_count: 0 }, now))).toBe('retention_count');
    expect(fieldOf(() => resolveSchedule(current, { retention_count: 101 }, now))).toBe('retention_count');
  });

  it('reads a target time only with its zone', () => {
    expect(parseTargetTime('2026-11-25T06:00:00Z').toISOString()).toBe('2026-11-25T06:00:00.000Z');
    expect(parseTargetTime('2026-11-25T08:00:00.5+02:00').toISOString()).toBe('2026-11-25T06:00:00.500Z');
    for (const bad of ['2026-11-25T06:00:00', 'yesterday', '2026-13-40T00:00:00Z', '1700000000'])
      expect(
        fieldOf(() => parseTargetTime(bad)),
        bad,
      ).toBe('target_time');
  });
});

describe('the recovery window', () => {
  const db = (over: Partial<DatabaseRecord> = {}) => ({ engine: 'postgresql', archivedUntil: null, deletedAt: null, ...over }) as DatabaseRecord;
  const backup = (completedAt: string | null, status: BackupRecord['status'] = 'completed') =>
    ({ status, completedAt: completedAt ? new Date(completedAt) : null }) as BackupRecord;
  const listing = (over: Partial<RepositoryListing> = {}): RepositoryListing => ({
    readable: true,
    backups: [],
    archiving: true,
    archivedUntil: null,
    ...over,
  });
  const now = new Date('2026-11-25T12:00:00Z');

  it('runs from just after the oldest completed backup to now while the server archives', () => {
    const w = recoveryWindow(db(), [backup('2026-11-25T10:00:00Z'), backup('2026-11-25T08:00:00Z'), backup(null, 'running')], listing(), now);
    expect(w).toEqual({ earliest: new Date('2026-11-25T08:00:01Z'), latest: now });
  });

  it('ends where the archive is known to reach when the server does not archive, or was deleted', () => {
    const backups = [backup('2026-11-25T08:00:00Z')];
    expect(recoveryWindow(db(), backups, listing({ archiving: false, archivedUntil: new Date('2026-11-25T09:30:00Z') }), now)?.latest).toEqual(
      new Date('2026-11-25T09:30:00Z'),
    );
    const deleted = db({ deletedAt: new Date('2026-11-25T11:00:00Z'), archivedUntil: new Date('2026-11-25T10:59:59Z') });
    expect(recoveryWindow(deleted, backups, listing({ archiving: false }), now)?.latest).toEqual(new Date('2026-11-25T10:59:59Z'));
  });

  it('is null for mysql and before any backup completed', () => {
    expect(recoveryWindow(db({ engine: 'mysql' }), [backup('2026-11-25T08:00:00Z')], listing(), now)).toBeNull();
    expect(recoveryWindow(db(), [backup(null, 'running'), backup('2026-11-25T08:00:00Z', 'failed')], listing(), now)).toBeNull();
  });
});

describe("the docker adapter's reading of pier-backup list", () => {
  const pgBackup = (label: string, name: string | undefined, start: number, stop: number) => ({
    label,
    annotation: name ? { 'pier-name': name, 'pier-method': 'scheduled' } : undefined,
    timestamp: { start, stop },
    info: { repository: { size: 6097547 } },
  });

  it('postgresql: finished backups from pgBackRest, running and failed ones from the server, cut-short ones failed', () => {
    const doc = {
      info: [
        { status: { code: 0, message: 'ok' }, backup: [pgBackup('20261125-062716F', 'b1', 1000, 1003), pgBackup('20261125-070000F', undefined, 2000, 2002)] },
      ],
      states: [
        { name: 'b1', method: 'scheduled', status: 'completed', started_at: 999, completed_at: 1004 },
        { name: 'b2', method: 'manual', status: 'running', started_at: 3000 },
        { name: 'b3', method: 'manual', status: 'failed', started_at: 2500, completed_at: 2501, error: 'ERROR: [050]: no space' },
        { name: 'b4', method: 'triggered', status: 'running', started_at: 2600 },
        { name: 'gone', method: 'manual', status: 'completed', started_at: 100, completed_at: 101 },
      ],
      archiver: { last_archived_at: 3100, last_failed_at: null, in_recovery: false },
      booted_at: 2700,
    };
    const l = parsePostgresListing(JSON.stringify(doc));
    expect(l).toMatchObject({ readable: true, archiving: true, archivedUntil: new Date(3100_000) });
    const byName = Object.fromEntries(l.backups.map((b) => [b.name, b]));
    expect(Object.keys(byName).sort()).toEqual(['20261125-070000f', 'b1', 'b2', 'b3', 'b4']);
    expect(byName.b1).toMatchObject({ status: 'completed', method: 'scheduled', ref: '20261125-062716F', sizeBytes: 6097547, completedAt: new Date(1003_000) });
    expect(byName.b2).toMatchObject({ status: 'running', completedAt: null });
    expect(byName.b3).toMatchObject({ status: 'failed', error: 'ERROR: [050]: no space' });
    // Started before the server's last boot: the restart cut it short.
    expect(byName.b4).toMatchObject({ status: 'failed', error: expect.stringMatching(/restarted/) });
  });

  it('postgresql: an unreadable repository is not an empty one; a failing archiver does not archive', () => {
    const unreadable = parsePostgresListing(
      JSON.stringify({ info: [{ status: { code: 99, message: 'TLS refused' } }], states: [], archiver: null, booted_at: 0 }),
    );
    expect(unreadable).toMatchObject({ readable: false, error: 'TLS refused' });
    const empty = parsePostgresListing(
      JSON.stringify({ info: [{ status: { code: 1, message: 'missing stanza path' } }], states: [], archiver: null, booted_at: 0 }),
    );
    expect(empty).toMatchObject({ readable: true, backups: [], archiving: false });
    const failing = parsePostgresListing(
      JSON.stringify({
        info: [{ status: { code: 0 }, backup: [] }],
        states: [],
        archiver: { last_archived_at: 10, last_failed_at: 20, in_recovery: false },
        booted_at: 0,
      }),
    );
    expect(failing).toMatchObject({ archiving: false, archivedUntil: new Date(10_000) });
  });

  it('mysql: finished backups from their meta, an unreadable store says so', () => {
    const l = parseMysqlListing(
      JSON.stringify({
        metas: [{ name: 'm1', method: 'manual', started_at: 10, completed_at: 12, size_bytes: 765416, gtid: '0-1-5' }],
        states: [{ name: 'm2', method: 'scheduled', status: 'running', started_at: 20 }],
        booted_at: 5,
        repo_error: null,
      }),
    );
    expect(l.backups).toEqual([
      {
        name: 'm1',
        method: 'manual',
        status: 'completed',
        ref: 'm1',
        sizeBytes: 765416,
        startedAt: new Date(10_000),
        completedAt: new Date(12_000),
        error: null,
      },
      { name: 'm2', method: 'scheduled', status: 'running', ref: null, sizeBytes: null, startedAt: new Date(20_000), completedAt: null, error: null },
    ]);
    expect(parseMysqlListing(JSON.stringify({ metas: [], states: [], booted_at: 0, repo_error: 'SignatureDoesNotMatch\n' }))).toMatchObject({
      readable: false,
      error: 'SignatureDoesNotMatch',
    });
  });
});

describe("the docker adapter's reading of a server's health", () => {
  const c = (component: string, status: string, extra: Record<string, string> = {}) =>
    ({
      Id: `${component}${extra['pier.replica'] ?? ''}`,
      State: 'running',
      Status: status,
      Labels: { 'pier.component': component, 'pier.engine': 'postgresql', ...extra },
    }) as unknown as Docker.ContainerInfo;

  it('tells a restore under way (however long) from one that failed, by the health output', () => {
    const server = c('server', 'Up 9 minutes (unhealthy)');
    const pooler = c('pooler', 'Up 9 minutes (healthy)');
    expect(observeParts([server, pooler], new Map([['server', 'starting: restoring from the backup']]))).toEqual({
      phase: 'starting',
      reason: 'server: restoring from the backup',
    });
    expect(observeParts([server, pooler], new Map([['server', 'failed: restore from the backup failed: ERROR: [075]']]))).toEqual({
      phase: 'failed',
      reason: 'server: restore from the backup failed: ERROR: [075]',
    });
    expect(observeParts([server, pooler])).toMatchObject({ phase: 'failed' });
  });

  it('reads a server that is not ready as the database, whatever the pooler does meanwhile', () => {
    // A server in a restart loop, caught between two restarts; its pooler exits with it.
    const pooler = { ...c('pooler', 'Restarting (1) Less than a second ago'), State: 'restarting' } as Docker.ContainerInfo;
    expect(observeParts([c('server', 'Up Less than a second'), pooler])).toEqual({ phase: 'starting', reason: 'server starting' });
    const restarting = { ...c('server', 'Restarting (1) 2 seconds ago'), State: 'restarting' } as Docker.ContainerInfo;
    expect(observeParts([restarting, pooler])).toEqual({ phase: 'failed', reason: 'server keeps exiting (Restarting (1) 2 seconds ago)' });
    // Once the server is ready, a failing pooler is the database failing.
    expect(observeParts([c('server', 'Up 1 minute (healthy)'), pooler])).toMatchObject({
      phase: 'failed',
      reason: expect.stringMatching(/^pooler keeps exiting/),
    });
  });

  it('counts replicas: one failing is the database failing, with its number', () => {
    const parts = [c('server', 'Up (healthy)'), c('pooler', 'Up (healthy)'), c('replica', 'Up (health: starting)', { 'pier.replica': '2' })];
    expect(observeParts(parts, new Map([['replica2', 'failed: cloning the primary failed: no pg_hba.conf entry']]))).toEqual({
      phase: 'failed',
      reason: 'replica 2: cloning the primary failed: no pg_hba.conf entry',
    });
    expect(observeParts(parts)).toMatchObject({ phase: 'starting' });
  });
});
