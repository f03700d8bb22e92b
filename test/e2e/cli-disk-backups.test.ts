// The built `pier` CLI on disk backups, through the gateway with every service running: a
// service with a disk, a file on it, a backup, a change, a restore that brings the file
// back; the schedule; the refusals as exit statuses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_LABELS, TEST_BACKUP_VOLUME } from '@pier/testing';
import { cleanVpcs, containersOf, dockerCli, inspect, TINY_HTTP } from './services-support.ts';
import { startCli, type CliHarness } from './cli-support.ts';

let cli: CliHarness;

beforeAll(async () => {
  await dockerCli('volume', 'create', ...RUN_LABELS.flatMap((l) => ['--label', l]), TEST_BACKUP_VOLUME);
  cli = await startCli({ env: { compute: { PIER_COMPUTE_BACKUP_VOLUME: TEST_BACKUP_VOLUME } } });
  expect((await cli.login()).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await cli?.stop();
  if (cli) await cleanVpcs(cli.platform.bootstrap.vpcId);
}, 60_000);

/** `sh -c script` in the service's running replica, as its user. */
async function inReplica(serviceId: string, script: string): Promise<string> {
  for (const id of await containersOf(serviceId)) {
    const c = await inspect(id);
    if (c.State.Running && c.Config.Labels['pier.role'] === 'replica') return dockerCli('exec', '-u', '1000', id, 'sh', '-c', script);
  }
  throw new Error(`no running replica of ${serviceId}`);
}

describe('pier services backups', () => {
  it('backs up a disk, restores it with --yes --wait, and manages the schedule', async () => {
    const created = await cli.json(['services', 'create', 'files', '--image', TINY_HTTP, '--disk-size-gb', '1', '--disk-mount-path', '/data', '--wait']);
    expect(created).toMatchObject({ status: 'running', disk_size_gb: 1 });
    // Docker makes a volume's root root's; the service's user is given its disk (fsGroup does it on Kubernetes).
    await dockerCli(
      'run',
      '--rm',
      ...RUN_LABELS.flatMap((l) => ['--label', l]),
      '-v',
      `pier-disk-${created.id}:/disk`,
      '--entrypoint',
      'chown',
      'pier/volume-tools:1',
      '1000',
      '/disk',
    );
    await inReplica(created.id, 'echo before > /data/state.txt');

    const backup = await cli.json(['services', 'backups', 'create', 'files', '--wait']);
    expect(backup).toMatchObject({ status: 'completed', method: 'manual', error: null });
    const table = await cli.pier(['services', 'backups', 'list', 'files']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+STATUS\s+METHOD\s+SIZE\s+CREATED\s+COMPLETED$/m);
    expect(table.stdout).toContain(`${backup.id}  completed  manual`);
    expect(table.stdout).toContain('Schedule: none');

    await inReplica(created.id, 'echo after > /data/state.txt');
    // Destructive: refused without --yes when standard input is not a terminal.
    expect(await cli.pier(['services', 'backups', 'restore', 'files', backup.id])).toMatchObject({ code: 2, stderr: expect.stringContaining('--yes') });
    const restored = await cli.pier(['services', 'backups', 'restore', 'files', backup.id, '--yes', '--wait']);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toBe(`Restored backup ${backup.id} onto files: the service is running\n`);
    expect(restored.stderr).toMatch(/restore \w{8}: completed/);
    expect(await inReplica(created.id, 'cat /data/state.txt')).toBe('before');
    expect(await cli.pier(['services', 'backups', 'list', 'files'])).toMatchObject({ stdout: expect.stringMatching(/Last restore: backup \S+, completed/) });

    const schedule = await cli.pier(['services', 'backups', 'schedule', 'set', 'files', '--cron', '0 3 * * *', '--retention', '3']);
    expect(schedule.code).toBe(0);
    expect(schedule.stdout).toMatch(/^schedule\s+0 3 \* \* \* \(UTC\)$/m);
    expect(schedule.stdout).toMatch(/^keeps\s+3 scheduled backups$/m);
    expect((await cli.json(['services', 'backups', 'list', 'files'])).schedule).toMatchObject({ schedule: '0 3 * * *', retention_count: 3 });
    expect(await cli.pier(['services', 'backups', 'schedule', 'set', 'files', '--cron', 'often'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('schedule'),
    });
    expect((await cli.pier(['services', 'backups', 'schedule', 'delete', 'files'])).stdout).toBe('Backup schedule of files removed.\n');
    expect(await cli.pier(['services', 'backups', 'schedule', 'delete', 'files'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('(schedule_not_found)'),
    });
  }, 240_000);

  it('says why a service without a disk has no backups', async () => {
    expect((await cli.pier(['services', 'create', 'plain', '--image', TINY_HTTP])).code).toBe(0);
    expect(await cli.pier(['services', 'backups', 'create', 'plain'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/has no disk.*\(no_disk\)/) });
  });
});
