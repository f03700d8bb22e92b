import { RESTRICTED_CONTAINER_SECURITY, resourcesOf, s3ToolEnv } from '@pier/kit';
import { appUserOf, type Engine } from '../domain/database.ts';
import type { ClusterDatabase, ClusterRef } from '../domain/cluster-port.ts';
import type { S3Store } from './backup-store.ts';
import { repositoryPath, restoreEnv } from './docker-repository.ts';
import { ENGINE_PORT, replicaCount } from './docker-containers.ts';
import { LABELS, meta, names, secretEnv, type Manifest } from './kubernetes-meta.ts';

// The built-in kubernetes mode (PIER_DATABASES_KUBERNETES_OPERATOR=none): a database run
// by Pier itself from the docker adapter's images (deploy/images/pg-managed, mariadb), as
// plain Kubernetes objects. Per database:
//   db-<id>            StatefulSet of the primary (one pod, its data on a PVC) and the
//                      headless Service both StatefulSets name
//   db-<id>-replica    StatefulSet of the read replicas (pod n-1 is replica n)
//   db-<id>-rw, -ro    Services: the primary; the replicas only (never the primary)
//   db-<id>-pooler-rw, -pooler-ro   PgBouncer Deployments and their Services (postgresql)
//   db-<id>-external, -external-ro  LoadBalancer or NodePort Services, external access on
//   db-<id>-credentials, -access, -backup-store   Secrets: passwords, the engine's access
//                      rules (pg_hba.conf / account SQL, read at a first start), S3 keys
// The pods meet the restricted Pod Security Standard: they run as the images' engine user.

/** The images' engine user and group (deploy/images: Debian's postgres and mysql accounts). */
export const ENGINE_USER: Record<Engine, { uid: number; gid: number }> = { postgresql: { uid: 100, gid: 102 }, mysql: { uid: 100, gid: 101 } };
const DATA_DIR: Record<Engine, string> = { postgresql: '/var/lib/postgresql/data', mysql: '/var/lib/mysql' };
const CONTAINER = 'server';

export type PodRole = 'primary' | 'replica' | 'pooler-rw' | 'pooler-ro';

export interface BuiltinSettings {
  image: (engine: Engine) => string;
  storageClass?: string;
  externalService: 'LoadBalancer' | 'NodePort';
  backupStore?: S3Store;
}

export const builtinNames = (shortId: string) => {
  const n = names(shortId);
  return {
    ...n,
    primary: n.cluster,
    headless: n.cluster,
    replicas: `${n.cluster}-replica`,
    credentials: `${n.cluster}-credentials`,
    access: `${n.cluster}-access`,
    rw: n.pgRw,
    ro: n.pgRo,
  };
};

export const serverContainerName = CONTAINER;

/** A database's pods of one role. */
export const roleSelector = (databaseId: string, role: PodRole) => ({ [LABELS.database]: databaseId, [LABELS.role]: role });

function podLabels(db: ClusterRef & { workspaceId?: string }, role: PodRole) {
  return { ...meta(db, '').labels, [LABELS.role]: role };
}

function podSecurity(engine: Engine) {
  const { uid, gid } = ENGINE_USER[engine];
  // fsGroup: volumes whose driver honours it (most do; local-path's hostPath does not, and
  // makes its directories world-writable instead) are the engine group's.
  return { runAsNonRoot: true, runAsUser: uid, runAsGroup: gid, fsGroup: gid, seccompProfile: { type: 'RuntimeDefault' } };
}

/**
 * The instance type as limits; the requests ask a tenth of its CPU, so a small node still
 * places a primary beside its replicas, poolers and copies (memory is requested whole: a
 * database must not be the first thing the kernel kills).
 */
function resources(db: ClusterDatabase) {
  const r = resourcesOf(db.instanceType);
  return {
    requests: { cpu: `${Math.round(r.cpu * 100)}m`, memory: `${r.memoryMiB}Mi` },
    limits: { cpu: `${Math.round(r.cpu * 1000)}m`, memory: `${r.memoryMiB}Mi` },
  };
}

/** A pod of the engine's image as every built-in pod runs: restricted, no token, no service links. */
function podSpec(db: ClusterRef, s: BuiltinSettings, container: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    securityContext: podSecurity(db.engine),
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    ...extra,
    containers: [{ name: CONTAINER, image: s.image(db.engine), imagePullPolicy: 'IfNotPresent', securityContext: RESTRICTED_CONTAINER_SECURITY, ...container }],
  };
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

export function credentialsSecret(db: ClusterDatabase, passwords: { app: string; console: string; replication: string }): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(db, builtinNames(db.shortId).credentials),
    type: 'Opaque',
    stringData: { username: appUserOf(db.shortId), password: passwords.app, console: passwords.console, replication: passwords.replication },
  };
}

/** The engine's access rules as a first start reads them (later changes are pushed with `pier-access`). */
export function accessSecret(db: ClusterDatabase, access: string): Manifest {
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(db, builtinNames(db.shortId).access), type: 'Opaque', stringData: { access: b64(access) } };
}

/** The store's keys, as the images' tools read them (PIER_S3_*). */
export function storeEnvSecret(db: ClusterRef, store: S3Store): Manifest {
  const env = Object.fromEntries(s3ToolEnv(store).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(db, builtinNames(db.shortId).storeSecret), type: 'Opaque', stringData: env };
}

/** Where a database's tools find its repository: its place in the store, or none at all. */
function repositoryEnv(db: ClusterRef, s: BuiltinSettings) {
  if (!s.backupStore) return { env: [{ name: 'PIER_BACKUP_REPO', value: 'none' }], envFrom: [] };
  return {
    env: [
      { name: 'PIER_BACKUP_REPO', value: 's3' },
      { name: 'PIER_BACKUP_PATH', value: repositoryPath({ kind: 's3', store: s.backupStore }, db.engine, db.id) },
    ],
    envFrom: [{ secretRef: { name: builtinNames(db.shortId).storeSecret } }],
  };
}

const kv = (pairs: string[]) => pairs.map((p) => ({ name: p.slice(0, p.indexOf('=')), value: p.slice(p.indexOf('=') + 1) }));

/** The images' readiness: `pier-health` (accepting connections; a replica: following its primary). */
const probe = { exec: { command: ['pier-health'] }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3 };

function dataClaim(db: ClusterDatabase, s: BuiltinSettings) {
  return {
    metadata: { name: 'data', labels: meta(db, '').labels },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: `${db.storageGb}Gi` } },
      ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
    },
  };
}

function statefulSet(
  db: ClusterDatabase,
  name: string,
  role: 'primary' | 'replica',
  replicas: number,
  container: Record<string, unknown>,
  s: BuiltinSettings,
): Manifest {
  const n = builtinNames(db.shortId);
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(db, name),
    spec: {
      serviceName: n.headless,
      replicas,
      // Replicas start and go together; the primary is one pod anyway.
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: roleSelector(db.id, role) },
      // A replica scaled away takes its copy of the data with it; a deleted database its volumes.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
      template: {
        metadata: { labels: podLabels(db, role) },
        spec: podSpec(
          db,
          s,
          {
            ports: [{ name: db.engine, containerPort: ENGINE_PORT[db.engine] }],
            readinessProbe: probe,
            resources: resources(db),
            volumeMounts: [
              { name: 'data', mountPath: DATA_DIR[db.engine] },
              // PostgreSQL's shared memory beyond the runtime's 64 MiB /dev/shm default.
              ...(db.engine === 'postgresql' ? [{ name: 'shm', mountPath: '/dev/shm' }] : []),
            ],
            ...container,
          },
          {
            terminationGracePeriodSeconds: 60,
            volumes: db.engine === 'postgresql' ? [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '128Mi' } }] : [],
          },
        ),
      },
      volumeClaimTemplates: [dataClaim(db, s)],
    },
  };
}

/** The primary: PIER_* as the docker adapter's server container has them, secrets from Secrets. */
export function primaryStatefulSet(db: ClusterDatabase, s: BuiltinSettings): Manifest {
  const n = builtinNames(db.shortId);
  const repo = repositoryEnv(db, s);
  const env = [
    { name: 'PIER_DB_NAME', value: db.shortId },
    { name: 'PIER_APP_USER', value: appUserOf(db.shortId) },
    secretEnv('PIER_APP_PASSWORD', n.credentials, 'password'),
    secretEnv('PIER_CONSOLE_PASSWORD', n.credentials, 'console'),
    secretEnv('PIER_REPLICATION_PASSWORD', n.credentials, 'replication'),
    secretEnv(db.engine === 'postgresql' ? 'PIER_HBA_B64' : 'PIER_ACCESS_B64', n.access, 'access'),
    // The replication login made by the server itself at its start: replicas start beside it.
    ...(db.engine === 'postgresql' ? [{ name: 'PIER_REPLICATION_AT_START', value: '1' }] : []),
    ...repo.env,
    // Read at the first start only: the data then exists, and later starts leave it be.
    ...(db.restore && s.backupStore ? kv(restoreEnv({ kind: 's3', store: s.backupStore }, db.restore)) : []),
  ];
  return statefulSet(db, n.primary, 'primary', 1, { args: [db.engine === 'postgresql' ? 'postgres' : 'mariadbd'], env, envFrom: repo.envFrom }, s);
}

/**
 * The replicas: one StatefulSet whose pod n-1 is replica n, so its replication slot
 * (postgresql) or server id (mysql; the primary is 1) comes from the pod's ordinal.
 */
export function replicaStatefulSet(db: ClusterDatabase, s: BuiltinSettings): Manifest {
  const n = builtinNames(db.shortId);
  const env = [
    { name: 'PIER_PRIMARY_HOST', value: n.rw },
    secretEnv('PIER_REPLICATION_PASSWORD', n.credentials, 'replication'),
    { name: 'PIER_DB_NAME', value: db.shortId },
    ...(db.engine === 'postgresql' ? [secretEnv('PIER_HBA_B64', n.access, 'access')] : []),
    { name: 'PIER_POD_INDEX', valueFrom: { fieldRef: { fieldPath: `metadata.labels['apps.kubernetes.io/pod-index']` } } },
  ];
  const script = 'n=$((PIER_POD_INDEX + 1)); export PIER_REPLICA_SLOT=replica_$n PIER_SERVER_ID=$((n + 1)); exec /usr/local/bin/entrypoint.sh replica';
  return statefulSet(db, n.replicas, 'replica', replicaCount(db), { command: ['bash', '-c', script], env }, s);
}

/** A PgBouncer in front of the primary (`rw`) or the replicas (`ro`). */
export function poolerDeployment(db: ClusterDatabase, target: 'rw' | 'ro', s: BuiltinSettings): Manifest {
  const n = builtinNames(db.shortId);
  const role: PodRole = target === 'rw' ? 'pooler-rw' : 'pooler-ro';
  const user = appUserOf(db.shortId);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(db, target === 'rw' ? n.poolerRw : n.poolerRo),
    spec: {
      replicas: 1,
      selector: { matchLabels: roleSelector(db.id, role) },
      template: {
        metadata: { labels: podLabels(db, role) },
        spec: podSpec(db, s, {
          args: ['pgbouncer'],
          env: [
            { name: 'PIER_POOLER_TARGET', value: target === 'rw' ? n.rw : n.ro },
            { name: 'PIER_APP_USER', value: user },
            secretEnv('PIER_APP_PASSWORD', n.credentials, 'password'),
            { name: 'PIER_POOL_SIZE', value: '20' },
          ],
          ports: [{ name: 'pgbouncer', containerPort: 5432 }],
          readinessProbe: { tcpSocket: { port: 5432 }, periodSeconds: 2 },
          resources: { requests: { cpu: '25m', memory: '32Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
        }),
      },
    },
  };
}

function service(db: ClusterDatabase, name: string, selector: Record<string, string>, extra: Record<string, unknown> = {}): Manifest {
  const port = ENGINE_PORT[db.engine];
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(db, name),
    spec: { selector, ports: [{ name: db.engine, port, targetPort: port, protocol: 'TCP' }], ...extra },
  };
}

/** The Services inside the VPC: headless (the StatefulSets'), -rw, -ro and, for postgresql, the poolers'. */
export function internalServices(db: ClusterDatabase): Manifest[] {
  const n = builtinNames(db.shortId);
  return [
    // Not-ready addresses too: a replica clones from its primary before either is "ready".
    service(db, n.headless, { [LABELS.database]: db.id }, { clusterIP: 'None', publishNotReadyAddresses: true }),
    service(db, n.rw, roleSelector(db.id, 'primary')),
    service(db, n.ro, roleSelector(db.id, 'replica')),
    ...(db.engine === 'postgresql'
      ? [service(db, n.poolerRw, roleSelector(db.id, 'pooler-rw')), service(db, n.poolerRo, roleSelector(db.id, 'pooler-ro'))]
      : []),
  ];
}

/**
 * External access: the primary, and the replicas (the primary while there are none). Local
 * traffic policy keeps the client's own address, which the engine's rules judge; with a
 * LoadBalancer the allowlist applies at the balancer too.
 */
export function externalServices(db: ClusterDatabase, s: BuiltinSettings, domain: string | undefined): Manifest[] {
  const n = builtinNames(db.shortId);
  const external = (name: string, selector: Record<string, string>, hostname: string | undefined) => {
    const m = service(db, name, selector, {
      type: s.externalService,
      externalTrafficPolicy: 'Local',
      ...(s.externalService === 'LoadBalancer' && db.allowlist.length ? { loadBalancerSourceRanges: db.allowlist } : {}),
    });
    return hostname ? { ...m, metadata: { ...m.metadata, annotations: { 'external-dns.alpha.kubernetes.io/hostname': hostname } } } : m;
  };
  const replicas = replicaCount(db) > 0;
  return [
    external(n.external, roleSelector(db.id, 'primary'), domain && `${db.shortId}.${domain}`),
    external(n.externalRo, roleSelector(db.id, replicas ? 'replica' : 'primary'), domain && `${db.shortId}-ro.${domain}`),
  ];
}

/** A one-off pod running `pier-backup <args>` against a database's repository (its server is not running). */
export function backupToolPod(db: ClusterRef, podName: string, args: string[], s: BuiltinSettings): Record<string, unknown> {
  const repo = repositoryEnv(db, s);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...meta(db, podName), labels: { ...meta(db, podName).labels, [LABELS.component]: 'database-backup-tool' } },
    spec: podSpec(
      db,
      s,
      {
        command: ['pier-backup', ...args],
        env: repo.env,
        envFrom: repo.envFrom,
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
      },
      { restartPolicy: 'Never' },
    ),
  };
}
