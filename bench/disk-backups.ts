/**
 * Disk backups benchmark, on the docker cluster, the store a named volume of its own: a web
 * service (pier/tiny-http) with a disk holding random data (which does not compress), text
 * (which does) and many small files, then
 *   1. the pause: how long its replica stays paused for the copy (Docker's own pause and
 *      unpause events), the one moment a backup takes the service away;
 *   2. backup: POST backups → the record `completed`, and the archive's size;
 *   3. restore: POST backups/restore → the restore `completed` and the service `running`
 *      again (the extraction into a new volume, the replica's restart and health check).
 * Every time is from the request to the answer that shows it done, polled every 100 ms.
 * Compute runs in this process, the replica and the copying containers in Docker.
 *
 * `benchDiskBackups()` is what `pnpm bench` calls (section `disk-backups`); `tsx
 * bench/disk-backups.ts` runs it alone. Env: PIER_BENCH_DISK_RANDOM_MIB (256),
 * PIER_BENCH_DISK_TEXT_MIB (768), PIER_BENCH_DISK_FILES (10000).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { docker } from '@pier/testing';
import { startInfra, type Infra } from './infra.ts';
import { startComputeAlone } from './compute-alone.ts';

export interface DiskBackupBenchResult {
  dataBytes: number;
  pausedMs: number;
  backupMs: number;
  archiveBytes: number;
  restoreMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** `sh -c script` in a one-off container of pier/volume-tools with `volume` at /disk; its standard output. */
async function onVolume(volume: string, script: string): Promise<string> {
  const c = await docker.createContainer({
    Image: 'pier/volume-tools:1',
    Entrypoint: ['sh', '-c', script],
    HostConfig: { Mounts: [{ Type: 'volume', Source: volume, Target: '/disk' }], NetworkMode: 'none' },
  });
  try {
    const out: Buffer[] = [];
    const stream = await c.attach({ stream: true, stdout: true, stderr: false });
    stream.on('data', (chunk: Buffer) => out.push(chunk));
    await c.start();
    await c.wait();
    // Without a TTY each frame has an 8-byte header; stdout only, so frames are read in order.
    const raw = Buffer.concat(out);
    const text: Buffer[] = [];
    for (let i = 0; i + 8 <= raw.length;) {
      const size = raw.readUInt32BE(i + 4);
      text.push(raw.subarray(i + 8, i + 8 + size));
      i += 8 + size;
    }
    return Buffer.concat(text).toString('utf8');
  } finally {
    await c.remove({ force: true });
  }
}

export async function benchDiskBackups(opts: { infra?: Infra; log?: (line: string) => void } = {}): Promise<DiskBackupBenchResult> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const randomMiB = Number(process.env.PIER_BENCH_DISK_RANDOM_MIB ?? 256);
  const textMiB = Number(process.env.PIER_BENCH_DISK_TEXT_MIB ?? 768);
  const files = Number(process.env.PIER_BENCH_DISK_FILES ?? 10_000);
  const infra = opts.infra ?? (await startInfra());
  const store = `pier-bench-disk-backups-${randomBytes(3).toString('hex')}`;
  const alone = await startComputeAlone(infra, { PIER_EDGE: 'off', PIER_COMPUTE_BACKUP_VOLUME: store });
  const { call } = alone;
  /** Polls GET `path` until `done` holds; the time since `t0`. */
  const until = async (path: string, done: (body: any) => boolean, t0: number): Promise<{ ms: number; body: any }> => {
    for (;;) {
      const body = await call('GET', path);
      if (done(body)) return { ms: performance.now() - t0, body };
      if (performance.now() - t0 > 600_000) throw new Error(`${path}: not done within 10 min: ${JSON.stringify(body)}`);
      await sleep(100);
    }
  };
  try {
    const svc = await call('POST', '', {
      name: 'bench-disk',
      image: 'pier/tiny-http:1',
      health_check_path: '/healthz',
      disk_size_gb: 5,
      disk_mount_path: '/data',
    });
    await until(`/${svc.id}`, (s) => s.status === 'running', performance.now());
    const fill =
      `head -c ${randomMiB}M /dev/urandom > /disk/random.bin && ` +
      `yes 'a line of a log file, much like the one before it and the one after it' | head -c ${textMiB}M > /disk/app.log && ` +
      `mkdir /disk/small && cd /disk/small && seq 1 ${files} | xargs -n 500 touch && du -sb /disk | cut -f1`;
    const dataBytes = Number((await onVolume(`pier-disk-${svc.id}`, fill)).trim());
    log(`  disk: ${mib(dataBytes)} (${randomMiB} MiB random, ${textMiB} MiB text, ${files} empty files)`);

    // Docker's own record of the pause: its events, with nanosecond times.
    const events = (await docker.getEvents({
      filters: { type: ['container'], event: ['pause', 'unpause'], label: [`pier.service=${svc.id}`] },
    })) as NodeJS.ReadableStream;
    const pauses: Record<string, number> = {};
    events.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        const e = JSON.parse(line) as { Action: string; timeNano: number };
        pauses[e.Action] = e.timeNano;
      }
    });

    let t0 = performance.now();
    const taken = await call('POST', `/${svc.id}/backups`);
    const { ms: backupMs, body: list } = await until(`/${svc.id}/backups`, (l) => l.items.some((b: any) => b.id === taken.id && b.status !== 'running'), t0);
    const backup = list.items.find((b: any) => b.id === taken.id);
    if (backup.status !== 'completed') throw new Error(`backup failed: ${backup.error}`);
    await sleep(200);
    (events as unknown as { destroy(): void }).destroy();
    const pausedMs = pauses.pause && pauses.unpause ? (pauses.unpause - pauses.pause) / 1e6 : NaN;
    log(`  replica paused for the copy: ${seconds(pausedMs)}`);
    log(`  backup → completed: ${seconds(backupMs)} (archive ${mib(backup.size_bytes)}, tar | zstd -1)`);

    t0 = performance.now();
    const restore = await call('POST', `/${svc.id}/backups/restore`, { backup_id: backup.id });
    await until(`/${svc.id}/backups`, (l) => l.restore?.id === restore.restore.id && l.restore.status !== 'running', t0);
    const { ms: restoreMs } = await until(`/${svc.id}`, (s) => s.status === 'running', t0);
    log(`  restore → service running again: ${seconds(restoreMs)}`);
    return { dataBytes, pausedMs, backupMs, archiveBytes: backup.size_bytes, restoreMs };
  } finally {
    await alone.stop();
    await docker
      .getVolume(store)
      .remove()
      .catch(() => undefined);
    if (!opts.infra) await infra.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  benchDiskBackups().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`disk backups bench failed: ${(err as Error).stack ?? err}`);
      process.exit(1);
    },
  );
}
