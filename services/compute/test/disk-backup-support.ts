/**
 * What the disk-backup tests share: the store volume of this test run, a command in a
 * replica as the service's user (how a test writes on the disk), and looks into the store.
 */
import { PassThrough } from 'node:stream';
import { expect } from 'vitest';
import { docker, testLabels, TEST_BACKUP_VOLUME, vpcContainers, type S3TestServer } from '@pier/testing';
import { backupKey } from '../src/cluster/docker-disk-backups.ts';
import { until, type Compute } from './support.ts';

/** The databases' backup volume of this test run: disk backups go to the same store. */
export const BACKUP_VOLUME = TEST_BACKUP_VOLUME;
export const VOLUME_TOOLS = 'pier/volume-tools:1';

/** The store volume, labelled with the run (so `./pier test` removes it) before compute would make one. */
export async function ensureBackupVolume(): Promise<void> {
  await docker.createVolume({ Name: BACKUP_VOLUME, Labels: testLabels() });
}

/** The running replica container of a service. */
export async function replicaOf(vpcId: string, serviceId: string): Promise<string> {
  const running = (await vpcContainers(vpcId, serviceId)).filter((c) => c.Labels['pier.role'] === 'replica' && c.State === 'running');
  if (running.length !== 1) throw new Error(`expected one running replica of ${serviceId}, found ${running.length}`);
  return running[0]!.Id;
}

/** Runs `sh -c script` in the container as `user` (the service's uid by default); its output and exit code. */
export async function shellIn(container: string, script: string, user = '1000'): Promise<{ code: number; out: string }> {
  const exec = await docker.getContainer(container).exec({ Cmd: ['sh', '-c', script], User: user, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  sink.on('data', (c: Buffer) => chunks.push(c));
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  return { code: ExitCode ?? -1, out: Buffer.concat(chunks).toString('utf8') };
}

/** Runs `sh -c script` in a one-off container of pier/volume-tools (as root) with `volumes` mounted (name to path); its output. */
async function inVolumes(volumes: Record<string, string>, script: string): Promise<string> {
  const container = await docker.createContainer({
    Image: VOLUME_TOOLS,
    Entrypoint: ['sh', '-c', script],
    Labels: testLabels(),
    HostConfig: { Mounts: Object.entries(volumes).map(([Source, Target]) => ({ Type: 'volume' as const, Source, Target })), NetworkMode: 'none' },
  });
  try {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (c: Buffer) => chunks.push(c));
    docker.modem.demuxStream(stream, sink, sink);
    await container.start();
    await container.wait();
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await container.remove({ force: true });
  }
}

const inStore = (script: string) => inVolumes({ [BACKUP_VOLUME]: '/store' }, script);

/** The backup ids whose archives the store holds for a service. */
export async function storedBackups(serviceId: string): Promise<string[]> {
  const out = await inStore(`ls /store/services/${serviceId} 2>/dev/null || true`);
  return out
    .split('\n')
    .filter((f) => f.endsWith('.tar.zst'))
    .map((f) => f.replace(/\.tar\.zst$/, ''))
    .sort();
}

/** Removes a backup's archive from the store behind compute's back (a store that lost it). */
export async function loseArchive(serviceId: string, backupId: string): Promise<void> {
  await inStore(`rm -f /store/${backupKey(serviceId, backupId)}`);
}

/** Names of the Docker volumes labelled with the service. */
export async function volumesOf(serviceId: string): Promise<string[]> {
  const { Volumes } = await docker.listVolumes({ filters: JSON.stringify({ label: [`pier.service=${serviceId}`] }) });
  return (Volumes ?? []).map((v) => v.Name).sort();
}

/** compute's settings for disk backups into the S3 test server, whose CA is in `caFile`. */
export function s3BackupEnv(s3: S3TestServer, caFile: string): Record<string, string> {
  return {
    PIER_COMPUTE_BACKUP_S3_ENDPOINT: `https://${s3.host}:${s3.port}`,
    PIER_COMPUTE_BACKUP_S3_BUCKET: s3.bucket,
    PIER_COMPUTE_BACKUP_S3_ACCESS_KEY_ID: s3.accessKeyId,
    PIER_COMPUTE_BACKUP_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
    PIER_COMPUTE_BACKUP_S3_CA_FILE: caFile,
    PIER_COMPUTE_BACKUP_INTERVAL_MS: '3600000',
  };
}

/** Deletes the service, then runs the sweep that removes a deleted service's backups. */
export async function deleteAndSweep(c: Compute, serviceId: string): Promise<void> {
  expect((await c.request('DELETE', `${c.base}/${serviceId}`)).status).toBe(202);
  await until(
    () => c.get(`${c.base}/${serviceId}`).then((r) => r.body),
    (s) => s.status === 'deleted',
    60_000,
  );
  await c.running.runDiskBackupsDue(new Date());
}
