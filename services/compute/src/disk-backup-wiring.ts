// The disk-backup half of compute's wiring: the records, the cluster's side (the docker
// adapter's store: a named volume or an S3 store; the kubernetes adapter's VolumeSnapshots,
// or archives into the S3 store made by Jobs) and the jobs. server.ts puts it in the context and runs the worker
// (domain/disk-backups/disk-backup-worker.ts) in the background.
import { s3StoreFromEnv, type Knex, type Logger } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import type { ComputeConfig } from './config.ts';
import { S3 } from './disk-backup-config.ts';
import { DiskJobs, type DiskBackupDeps, type JobClaims } from './domain/disk-backups/disk-backup-deps.ts';
import type { DiskBackupPort } from './domain/disk-backups/disk-backup-port.ts';
import { DockerDiskBackups, type DiskBackupRepository } from './cluster/docker-disk-backups.ts';
import { KubernetesDiskBackups } from './cluster/kubernetes-disk-backups.ts';
import { KubernetesArchiveDiskBackups } from './cluster/kubernetes-archive-disk-backups.ts';
import { KnexDiskBackupStore } from './store/disk-backup-store.ts';

/** Where the docker adapter keeps disk backups: the S3 store when one is configured, else the named volume. */
export function diskBackupRepository(config: ComputeConfig): DiskBackupRepository {
  const store = s3StoreFromEnv(S3, config);
  if (!store) return { kind: 'volume', volume: config.PIER_COMPUTE_BACKUP_VOLUME };
  return { kind: 's3', store };
}

function diskBackupPort(config: ComputeConfig): DiskBackupPort {
  if (config.PIER_CLUSTER === 'kubernetes') {
    const store = s3StoreFromEnv(S3, config);
    const kc = kubeConfigFrom(config.PIER_KUBECONFIG);
    const method = config.PIER_COMPUTE_DISK_BACKUP_METHOD ?? (store ? 'archive' : 'snapshot');
    // The config check refuses `archive` without a store.
    if (method === 'archive' && store) return new KubernetesArchiveDiskBackups(kc, { store, image: config.PIER_COMPUTE_BACKUP_IMAGE });
    return new KubernetesDiskBackups(kc, { snapshotClass: config.PIER_COMPUTE_VOLUME_SNAPSHOT_CLASS });
  }
  return new DockerDiskBackups({ host: config.PIER_DOCKER_HOST, image: config.PIER_COMPUTE_BACKUP_IMAGE, repository: diskBackupRepository(config) });
}

/** `claims`: the locks shared by every instance of compute (ctx.locks), so each backup or restore runs in one of them. */
export function createDiskBackups(config: ComputeConfig, db: Knex, logger: Logger, claims?: JobClaims): DiskBackupDeps {
  return { store: new KnexDiskBackupStore(db), port: diskBackupPort(config), jobs: new DiskJobs(logger, claims) };
}
