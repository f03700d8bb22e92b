// The Kubernetes objects of disk backups kept as archives in an S3 store, for clusters whose
// storage has no snapshots: a Job per copy running pier/volume-tools' pier-volume (the docker
// adapter's tool, the same archive format and keys) with the service's claim mounted, and a
// Secret per Job holding the store's settings. Pure functions: the adapter sends them, the
// tests validate them against the Kubernetes schemas.
import { vpcNamespace } from '@pier/kit';
import type { WorkloadRef } from '../domain/cluster-port.ts';
import { K8S_LABEL, MANAGED_BY, type Manifest } from './kubernetes-manifests.ts';

export type ArchiveStep = 'backup' | 'restore' | 'delete';

/** On a copy's Job and Secret: the service whose disk it is. Not `pier.dev/service`: the copy is no pod of the service (a restore waits for those to be gone). */
export const DISK_OF_LABEL = 'pier.dev/disk-of';

/** The Job (and its Secret) of one step of one backup or restore: named for it, so a resumed step finds it. */
export function archiveJobName(step: ArchiveStep, id: string): string {
  return `pier-disk-${step}-${id}`;
}

function labels(ref: WorkloadRef): Record<string, string> {
  return {
    [K8S_LABEL.managedBy]: MANAGED_BY,
    [K8S_LABEL.kind]: 'disk-backup',
    [K8S_LABEL.workspace]: ref.workspaceId,
    [K8S_LABEL.vpc]: ref.vpcId,
    [DISK_OF_LABEL]: ref.serviceId,
  };
}

/** The store's settings (s3ToolEnv: endpoint, bucket, keys, CA) for one Job, out of its spec. */
export function archiveSecretManifest(ref: WorkloadRef, name: string, env: string[]): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: vpcNamespace(ref.vpcId), labels: labels(ref) },
    type: 'Opaque',
    stringData: Object.fromEntries(env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)])),
  };
}

export interface ArchiveJob {
  step: ArchiveStep;
  /** The backup's id (backup, delete) or the restore's (restore). */
  id: string;
  /** services/<service id>/<backup id>.tar.zst */
  key: string;
  /** The claim read (backup) or filled (restore); none for a delete. */
  claim?: string;
  image: string;
  /** Longest the copy may take. */
  deadlineSeconds: number;
  /** The user the copy runs as: the service's own (run_as_user), whose files its disk holds. */
  uid: number;
}

/**
 * One pier-volume run, admitted by the VPC namespace's Pod Security Standard `restricted` as
 * the service's own pods are: as the service's user (and its fsGroup, as the claim is
 * mounted for the service), no capability, a read-only root, no service account token, no
 * Service links. It reads what the service can read, and a restore's files belong to that
 * user (their modes are kept). The archive is staged in the pod's /tmp (an emptyDir).
 */
export function archiveJobManifest(ref: WorkloadRef, j: ArchiveJob): Manifest {
  const name = archiveJobName(j.step, j.id);
  const mountPath = j.step === 'backup' ? '/source' : '/target';
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: vpcNamespace(ref.vpcId), labels: labels(ref) },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: j.deadlineSeconds,
      template: {
        metadata: { labels: labels(ref) },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { runAsUser: j.uid, runAsGroup: j.uid, fsGroup: j.uid, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'pier-volume',
              image: j.image,
              args: [j.step, j.key],
              env: [
                { name: 'PIER_BACKUP_REPO', value: 's3' },
                { name: 'HOME', value: '/tmp' },
              ],
              envFrom: [{ secretRef: { name } }],
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }, ...(j.claim ? [{ name: 'disk', mountPath, readOnly: j.step === 'backup' }] : [])],
            },
          ],
          volumes: [
            { name: 'tmp', emptyDir: {} },
            ...(j.claim ? [{ name: 'disk', persistentVolumeClaim: { claimName: j.claim, readOnly: j.step === 'backup' } }] : []),
          ],
        },
      },
    },
  };
}
