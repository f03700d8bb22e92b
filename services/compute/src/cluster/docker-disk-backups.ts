import Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { crashPoint, s3ToolEnv, type S3Store } from '@pier/kit';
import { WorkloadRejectedError, type WorkloadSpec } from '../domain/cluster-port.ts';
import { DiskBackupFailedError, type DiskBackupPort, type DiskRef } from '../domain/disk-backups/disk-backup-port.ts';
import { DockerEngine, dockerOptions } from './docker-engine.ts';
import { KIND_SERVICE, LABEL, volumeName } from './docker-labels.ts';

// Disk backups on the docker adapter. A backup is a tar of the service's named volume (owners
// and modes kept as numbers), compressed with zstd, made by a one-off container of
// pier/volume-tools (deploy/images/volume-tools/pier-volume) and kept in the backup store:
// the named volume the databases' backups use (PIER_COMPUTE_BACKUP_VOLUME) at
// services/<service id>/<backup id>.tar.zst, or that key under the prefix in an S3 store.
//
// Consistency: the service's running containers are paused (the cgroup freezer: no process of
// theirs runs, nothing they wrote is lost) while the archive is made, and unpaused as soon as
// the tool says `archived`; to S3 the upload follows from a staged copy, so the pause lasts
// the local copy only. The copy is what the processes had written when they were frozen.
//
// A restore removes the service's containers and extracts the archive into a new volume;
// the domain then starts the replicas on it (apply) and removes the old one.

export type DiskBackupRepository = { kind: 'volume'; volume: string } | { kind: 's3'; store: S3Store };

export interface DockerDiskBackupsOptions {
  /** `unix:///var/run/docker.sock` (default) or `tcp://host:port`. */
  host?: string;
  /** pier/volume-tools, built by deploy/images/build.sh. */
  image: string;
  repository: DiskBackupRepository;
}

/** Where a backup is kept, relative to the store's root (the volume's, or the S3 prefix). */
export function backupKey(serviceId: string, backupId: string): string {
  return `services/${serviceId}/${backupId}.tar.zst`;
}

const ARCHIVED = 'pier-volume: archived';
/** Where pier-volume finds the store volume, the disk to copy and the volume to fill. */
const MOUNT = { store: '/store', source: '/source', target: '/target' };
/** Output kept of a tool run, for the error of a failed one. */
const OUTPUT_LIMIT = 16 * 1024;

interface ToolRun {
  name: string;
  args: string[];
  mounts: Docker.MountConfig;
  labels: Record<string, string>;
  signal: AbortSignal;
  /** Each line of standard output, as it comes. */
  onLine?: (line: string) => void;
}

export class DockerDiskBackups implements DiskBackupPort {
  readonly kind = 'docker' as const;
  readonly survivesRestart = false;
  private readonly engine: DockerEngine;
  /** Without a request deadline: a tool container runs as long as its copy takes. */
  private readonly waiting: Docker;
  /** The end of each backup's tool run (its size), from capture to complete. */
  private readonly storing = new Map<string, Promise<number | null>>();
  private repositoryVolume?: Promise<unknown>;

  constructor(private readonly opts: DockerDiskBackupsOptions) {
    this.engine = new DockerEngine(opts.host, 15_000);
    this.waiting = new Docker(dockerOptions(opts.host, 0));
  }

  restoreVolume(disk: DiskRef, restoreId: string): string {
    return `${volumeName(disk.serviceId)}-${restoreId.slice(0, 8)}`;
  }

  async capture(disk: DiskRef, backupId: string, signal: AbortSignal): Promise<void> {
    const volume = disk.volume ?? volumeName(disk.serviceId);
    // Mounting a missing volume would create an empty one: a disk never made is no backup.
    await this.engine
      .call('volume inspect', () => this.engine.docker.getVolume(volume).inspect())
      .catch((err: unknown) => {
        if (!(err instanceof WorkloadRejectedError)) throw err;
        throw new DiskBackupFailedError(`the disk's volume ${volume} cannot be read (${err.message})`);
      });
    const paused = await this.pause(disk.serviceId);
    // A crash now leaves the replicas frozen: recovery (abandon) thaws them.
    crashPoint('compute.backup.paused');
    try {
      await new Promise<void>((resolve, reject) => {
        const run = this.runTool({
          name: `pier-disk-backup-${backupId}`,
          args: ['backup', backupKey(disk.serviceId, backupId)],
          mounts: [{ Type: 'volume', Source: volume, Target: MOUNT.source, ReadOnly: true }],
          labels: this.labels(disk),
          signal,
          onLine: (line) => {
            if (line === ARCHIVED) resolve();
          },
        });
        const size = run.then((out) => {
          const m = /^size_bytes=(\d+)$/m.exec(out);
          return m ? Number(m[1]) : null;
        });
        size.catch(() => undefined); // awaited by complete(); a failure before the archive is capture's
        this.storing.set(backupId, size);
        run.then(() => reject(new DiskBackupFailedError('the copy ended without an archive')), reject);
      });
    } finally {
      await this.unpause(paused);
    }
  }

  async complete(_disk: DiskRef, backupId: string): Promise<{ sizeBytes: number | null }> {
    const size = this.storing.get(backupId);
    if (!size) throw new DiskBackupFailedError('the copy is not running in this process');
    try {
      return { sizeBytes: await size };
    } finally {
      this.storing.delete(backupId);
    }
  }

  async abandon(disk: DiskRef, backupId: string): Promise<void> {
    this.storing.delete(backupId);
    await this.engine.removeContainer(`pier-disk-backup-${backupId}`);
    // Replicas a crash left frozen run again.
    const frozen = (await this.serviceContainers(disk.serviceId)).filter((c) => c.State === 'paused');
    await this.unpause(frozen.map((c) => c.Id));
    await this.remove(disk, backupId);
  }

  async remove(disk: DiskRef, backupId: string): Promise<void> {
    await this.runTool({
      name: `pier-disk-delete-${backupId}`,
      args: ['delete', backupKey(disk.serviceId, backupId)],
      mounts: [],
      labels: this.labels(disk),
      signal: new AbortController().signal,
    });
  }

  async prepareRestore(spec: WorkloadSpec, disk: DiskRef, backupId: string, volume: string, signal: AbortSignal): Promise<void> {
    // Scaled to zero: every container of the service goes (a cron template too); apply makes them again.
    for (const c of await this.serviceContainers(spec.serviceId)) await this.engine.removeContainer(c.Id);
    await this.engine.call('volume create', () =>
      this.engine.docker.createVolume({
        Name: volume,
        Labels: { [LABEL.managed]: 'true', [LABEL.kind]: KIND_SERVICE, [LABEL.vpc]: spec.vpcId, [LABEL.service]: spec.serviceId },
      }),
    );
    await this.runTool({
      name: `pier-disk-restore-${volume}`,
      args: ['restore', backupKey(spec.serviceId, backupId)],
      mounts: [{ Type: 'volume', Source: volume, Target: MOUNT.target }],
      labels: this.labels(disk),
      signal,
    });
  }

  async removeVolume(disk: DiskRef, volume: string | null): Promise<void> {
    const name = volume ?? volumeName(disk.serviceId);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.engine.removeVolume(name);
        return;
      } catch (err) {
        // A container just removed still holds its volume for a moment.
        if (attempt >= 10 || !/in use/i.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Tool containers are found by these (and cleaned up with the VPC), never taken for the service's own. */
  private labels(disk: DiskRef): Record<string, string> {
    return {
      [LABEL.managed]: 'true',
      [LABEL.kind]: 'disk-backup',
      [LABEL.workspace]: disk.workspaceId,
      [LABEL.vpc]: disk.vpcId,
      'pier.disk-of': disk.serviceId,
    };
  }

  private serviceContainers(serviceId: string): Promise<Docker.ContainerInfo[]> {
    return this.engine.call('container list', () =>
      this.engine.docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABEL.managed}=true`, `${LABEL.kind}=${KIND_SERVICE}`, `${LABEL.service}=${serviceId}`] }),
      }),
    );
  }

  /** Freezes the service's running containers (replicas, and a cron run in progress); their ids. */
  private async pause(serviceId: string): Promise<string[]> {
    const paused: string[] = [];
    try {
      for (const c of await this.serviceContainers(serviceId)) {
        if (c.State !== 'running') continue;
        await this.engine.call('container pause', () => this.engine.docker.getContainer(c.Id).pause());
        paused.push(c.Id);
      }
      return paused;
    } catch (err) {
      await this.unpause(paused);
      throw err;
    }
  }

  private async unpause(ids: string[]): Promise<void> {
    for (const id of ids) {
      await this.engine
        .call('container unpause', () => this.engine.docker.getContainer(id).unpause())
        .catch((err: unknown) => {
          // Gone or not paused (removed meanwhile): nothing to thaw.
          if (!/not paused|no such container/i.test(String((err as Error).message))) throw err;
        });
    }
  }

  private env(): string[] {
    const repo = this.opts.repository;
    if (repo.kind === 'volume') return ['PIER_BACKUP_REPO=volume'];
    return ['PIER_BACKUP_REPO=s3', ...s3ToolEnv(repo.store), `PIER_S3_PREFIX=${repo.store.prefix}`];
  }

  /** The store volume, created once with labels of its own (Docker would make an unlabelled one on first mount). */
  private ensureRepository(): Promise<unknown> {
    const repo = this.opts.repository;
    if (repo.kind !== 'volume') return Promise.resolve();
    this.repositoryVolume ??= this.engine
      .call('volume create', () =>
        this.engine.docker.createVolume({ Name: repo.volume, Labels: { [LABEL.managed]: 'true', 'pier.component': 'backup-repository' } }),
      )
      .catch((err: unknown) => {
        this.repositoryVolume = undefined;
        throw err;
      });
    return this.repositoryVolume;
  }

  /**
   * Runs pier-volume in a one-off container to its end (removed after); its standard output.
   * A non-zero exit is the backup's own failure, with what the tool said; `signal` stops it.
   */
  private async runTool(run: ToolRun): Promise<string> {
    await this.ensureRepository();
    const repo = this.opts.repository;
    // A container of that name is what a crash left: the run starts over.
    await this.engine.removeContainer(run.name);
    const created = await this.engine
      .call('container create', () =>
        this.engine.docker.createContainer({
          name: run.name,
          Image: this.opts.image,
          Cmd: run.args,
          Env: this.env(),
          Labels: run.labels,
          HostConfig: {
            Mounts: [...run.mounts, ...(repo.kind === 'volume' ? [{ Type: 'volume' as const, Source: repo.volume, Target: MOUNT.store }] : [])],
            // The S3 store is reached over the default bridge; a volume store needs no network at all.
            NetworkMode: repo.kind === 's3' ? 'bridge' : 'none',
            Memory: 512 * 1024 * 1024,
            NanoCpus: 1e9,
            SecurityOpt: ['no-new-privileges'],
          },
        }),
      )
      .catch((err: Error) => {
        if (/no such image/i.test(err.message))
          throw new DiskBackupFailedError(`the image ${this.opts.image} is not on the engine (deploy/images/build.sh volume-tools)`);
        throw err;
      });
    const container = this.waiting.getContainer(created.id);
    const stop = () => void this.engine.removeContainer(created.id).catch(() => undefined);
    run.signal.addEventListener('abort', stop, { once: true });
    try {
      const { stdout, stderr, ended } = await this.attach(container, run.onLine);
      await this.engine.call('container start', () => container.start());
      const { StatusCode } = (await this.engine.call('container wait', () => container.wait())) as { StatusCode: number };
      await ended;
      if (run.signal.aborted) throw new DiskBackupFailedError('stopped');
      if (StatusCode !== 0) {
        const said = stderr().trim().split('\n').slice(-3).join('; ');
        throw new DiskBackupFailedError(said || `pier-volume ${run.args[0]} exited with code ${StatusCode}`);
      }
      return stdout();
    } finally {
      run.signal.removeEventListener('abort', stop);
      await this.engine.removeContainer(created.id);
    }
  }

  /** Attached before the start, so no output is missed; lines of stdout go to `onLine` as they come. */
  private async attach(container: Docker.Container, onLine?: (line: string) => void) {
    const stream = (await this.engine.call('container attach', () => container.attach({ stream: true, stdout: true, stderr: true }))) as NodeJS.ReadableStream;
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    let stderr = '';
    let partial = '';
    out.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      stdout = (stdout + text).slice(-OUTPUT_LIMIT);
      const lines = (partial + text).split('\n');
      partial = lines.pop()!;
      for (const line of lines) onLine?.(line);
    });
    err.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-OUTPUT_LIMIT)));
    this.waiting.modem.demuxStream(stream, out, err);
    const ended = new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    return { stdout: () => stdout, stderr: () => stderr, ended };
  }
}
