import { createHash } from 'node:crypto';
import { CoreV1Api, type KubeConfig, type V1Job } from '@kubernetes/client-node';
import { UnavailableError, isKubernetesNotFound, s3ToolEnv, vpcNamespace, type S3Store } from '@pier/kit';
import { kubernetesApiConfiguration } from '@pier/kit/kubernetes';
import type { WorkloadRef, WorkloadSpec } from '../domain/cluster-port.ts';
import { DiskBackupFailedError, type DiskRef } from '../domain/disk-backups/disk-backup-port.ts';
import { backupKey } from './docker-disk-backups.ts';
import { KubernetesDiskBackups, sleep, type KubernetesDiskBackupsOptions } from './kubernetes-disk-backups.ts';
import { archiveJobManifest, archiveJobName, archiveSecretManifest, type ArchiveJob, type ArchiveStep } from './kubernetes-disk-archive-manifests.ts';
import { kubernetesCall, kubernetesError } from './kubernetes.ts';
import { diskClaimName } from './kubernetes-manifests.ts';
import { restoredClaimManifest, scaledDownManifest } from './kubernetes-snapshot-manifests.ts';

// Disk backups on the kubernetes adapter where the cluster's storage takes no snapshots (no
// CSI driver with them, as local-path-provisioner): the docker adapter's archive, made by the
// same tool (pier/volume-tools' pier-volume: tar with owners and modes as numbers, zstd, the
// S3 store at <prefix>/services/<service id>/<backup id>.tar.zst), run as a Job in the VPC's
// namespace with the service's claim mounted (read-only for a backup; the claim's volume
// decides the node, as for the service's pods). The store's settings reach the Job through a
// Secret of its own, deleted with it.
//
// Consistency: there is no freezer to reach through the Kubernetes API, so the service runs on
// while its disk is copied, file by file: a file written during the copy may be caught
// half-way. A snapshot (KubernetesDiskBackups) is crash-consistent; this is not.
//
// A restore: the workload scaled to zero and its pods gone (as for a snapshot), a new empty
// claim of the disk's size, a Job extracting the archive into it; the domain then repoints
// the workload at it. The Jobs run on while compute restarts and are followed again.

export interface KubernetesArchiveDiskBackupsOptions extends KubernetesDiskBackupsOptions {
  store: S3Store;
  /** pier/volume-tools, imported into (or pulled by) the cluster's nodes. */
  image: string;
  /** Longest a copy may take (the Jobs' activeDeadlineSeconds). */
  deadlineSeconds?: number;
}

type PodTemplate = { spec?: { securityContext?: { runAsUser?: number } } };

/** Who a copy without a disk (a delete) runs as. */
const NOBODY = 65534;

/** A restore's Job is named for its claim (which names the restore), hashed to fit a name. */
const restoreJobId = (claim: string) => createHash('sha256').update(claim).digest('hex').slice(0, 20);

export class KubernetesArchiveDiskBackups extends KubernetesDiskBackups {
  private readonly core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    private readonly archive: KubernetesArchiveDiskBackupsOptions,
  ) {
    super(kc, archive);
    this.core = new CoreV1Api(kubernetesApiConfiguration(kc, 15_000));
  }

  override async capture(disk: DiskRef, backupId: string): Promise<void> {
    const claim = disk.volume ?? diskClaimName(disk.serviceName);
    await this.start(disk, { step: 'backup', id: backupId, key: backupKey(disk.serviceId, backupId), claim, uid: await this.userOf(disk) });
  }

  override async complete(disk: DiskRef, backupId: string, signal: AbortSignal): Promise<{ sizeBytes: number | null }> {
    const out = await this.finish(disk, 'backup', backupId, signal);
    const m = /^size_bytes=(\d+)$/m.exec(out);
    return { sizeBytes: m ? Number(m[1]) : null };
  }

  override async abandon(disk: DiskRef, backupId: string): Promise<void> {
    await this.drop(disk, archiveJobName('backup', backupId));
    await this.remove(disk, backupId);
  }

  override async remove(disk: DiskRef, backupId: string): Promise<void> {
    await this.start(disk, { step: 'delete', id: backupId, key: backupKey(disk.serviceId, backupId), uid: NOBODY });
    await this.finish(disk, 'delete', backupId, new AbortController().signal);
  }

  override async prepareRestore(spec: WorkloadSpec, disk: DiskRef, backupId: string, claim: string, signal: AbortSignal): Promise<void> {
    await this.apply(scaledDownManifest(spec));
    await this.podsGone(spec, signal);
    await this.create(restoredClaimManifest(spec, claim, null));
    const id = restoreJobId(claim);
    await this.start(disk, { step: 'restore', id, key: backupKey(spec.serviceId, backupId), claim, uid: spec.config.run_as_user || NOBODY });
    await this.finish(disk, 'restore', id, signal);
  }

  /** The Job of a step and its Secret; ones a resumed step made already are kept. */
  private async start(ref: WorkloadRef, j: Omit<ArchiveJob, 'image' | 'deadlineSeconds'>): Promise<void> {
    const name = archiveJobName(j.step, j.id);
    const store = this.archive.store;
    await this.create(archiveSecretManifest(ref, name, [...s3ToolEnv(store), `PIER_S3_PREFIX=${store.prefix}`]));
    await this.create(archiveJobManifest(ref, { ...j, image: this.archive.image, deadlineSeconds: this.archive.deadlineSeconds ?? 6 * 3600 }));
  }

  /** Follows a step's Job to its end: its pod's output once it succeeded (the Job and Secret then go), the tool's error as the backup's when it failed. */
  private async finish(ref: WorkloadRef, step: ArchiveStep, id: string, signal: AbortSignal): Promise<string> {
    const name = archiveJobName(step, id);
    for (;;) {
      if (signal.aborted) throw new UnavailableError('compute is stopping', 'stopping');
      let job: V1Job | null | undefined;
      try {
        job = await this.job(ref, name);
      } catch (err) {
        // The API out of reach for a moment: the Job goes on regardless; look again.
        if (!(err instanceof UnavailableError)) throw err;
      }
      if (job === null) throw new DiskBackupFailedError(`the copy's Job ${name} is gone`);
      const failed = job?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
      if ((job?.status?.succeeded ?? 0) > 0 || failed) {
        const out = await this.output(ref, name);
        await this.drop(ref, name);
        if (!failed) return out;
        const said = out.trim().split('\n').filter(Boolean).slice(-3).join('; ');
        throw new DiskBackupFailedError(said || `the copy failed (${failed.reason ?? 'Failed'}: ${failed.message ?? 'no message'})`);
      }
      await sleep(this.opts.pollMs ?? 2000, signal);
    }
  }

  /** The service's user, as its workload runs it (its Deployment, or its CronJob's template). */
  private async userOf(disk: DiskRef): Promise<number> {
    for (const kind of ['Deployment', 'CronJob'] as const) {
      try {
        const o = (await this.objects.read({
          apiVersion: kind === 'Deployment' ? 'apps/v1' : 'batch/v1',
          kind,
          metadata: { name: disk.serviceName, namespace: vpcNamespace(disk.vpcId) },
        })) as { spec?: { template?: PodTemplate; jobTemplate?: { spec?: { template?: PodTemplate } } } };
        const template = o.spec?.template ?? o.spec?.jobTemplate?.spec?.template;
        return template?.spec?.securityContext?.runAsUser ?? NOBODY;
      } catch (err) {
        if (!isKubernetesNotFound(err)) throw kubernetesError(err, `read ${kind}`);
      }
    }
    throw new DiskBackupFailedError(`the service ${disk.serviceName} has no workload on the cluster to read its disk as`);
  }

  private async job(ref: WorkloadRef, name: string): Promise<V1Job | null> {
    try {
      return (await this.objects.read({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace: vpcNamespace(ref.vpcId) } })) as V1Job;
    } catch (err) {
      if (isKubernetesNotFound(err)) return null;
      throw kubernetesError(err, 'read Job');
    }
  }

  /** What the Job's pod printed (stdout and stderr); '' when its pod is gone. */
  private async output(ref: WorkloadRef, name: string): Promise<string> {
    const namespace = vpcNamespace(ref.vpcId);
    const pods = await kubernetesCall('list pods', () => this.core.listNamespacedPod({ namespace, labelSelector: `batch.kubernetes.io/job-name=${name}` }));
    const pod = pods.items[0]?.metadata?.name;
    if (!pod) return '';
    return kubernetesCall('read pod log', () => this.core.readNamespacedPodLog({ name: pod, namespace, container: 'pier-volume' })).catch(() => '');
  }

  private async drop(ref: WorkloadRef, name: string): Promise<void> {
    await this.delete(ref as DiskRef, 'batch/v1', 'Job', name);
    await this.delete(ref as DiskRef, 'v1', 'Secret', name);
  }
}
