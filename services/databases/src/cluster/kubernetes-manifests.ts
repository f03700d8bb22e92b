import { POD_SECURITY_ENFORCE_LABEL, POD_SECURITY_LEVEL, RESTRICTED_CONTAINER_SECURITY, restrictedPodSecurity, vpcNamespace, resourcesOf } from '@pier/kit';
import { appUserOf, CONSOLE_USER } from '../domain/database.ts';
import { pgHbaHostLines, type AccessPolicy } from '../domain/access.ts';
import type { ClusterDatabase } from '../domain/cluster-port.ts';
import { LABELS, CNPG, MOCO, JOB_USER, meta, names, secretEnv, type KubernetesSettings, type Manifest } from './kubernetes-meta.ts';
import { cnpgBackupConfig } from './kubernetes-backups.ts';
import { cnpgRecovery, isRestored, mocoRestore, renames, sourceOwnerRole } from './kubernetes-restore.ts';

// The objects the kubernetes adapter applies, as plain manifests (pure functions, so
// tests validate exactly what is sent). PostgreSQL runs under CloudNativePG (Cluster,
// Poolers); MySQL under MOCO (MySQLCluster), whose `replicas` is the odd instance count
// the spec's mysql rule asks for. Credentials live in Secrets in the VPC's namespace.
// Backups and restores (kubernetes-backups.ts, kubernetes-restore.ts) join both clusters
// when the adapter has a backup store.

export function namespaceManifest(vpcId: string): Manifest {
  // Restricted as compute makes it, whichever of the two services creates the namespace first.
  const labels = { [LABELS.managedBy]: 'pier', [LABELS.vpc]: vpcId, [POD_SECURITY_ENFORCE_LABEL]: POD_SECURITY_LEVEL };
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: vpcNamespace(vpcId), labels } };
}

export function credentialSecret(db: ClusterDatabase, name: string, username: string, password: string): Manifest {
  return { apiVersion: 'v1', kind: 'Secret', metadata: meta(db, name), type: 'kubernetes.io/basic-auth', stringData: { username, password } };
}

function resources(db: ClusterDatabase) {
  const r = resourcesOf(db.instanceType);
  const q = { cpu: `${Math.round(r.cpu * 1000)}m`, memory: `${r.memoryMiB}Mi` };
  return { requests: q, limits: q };
}

export function accessPolicy(db: ClusterDatabase, s: KubernetesSettings): AccessPolicy {
  return {
    engine: db.engine,
    database: db.shortId,
    appUser: appUserOf(db.shortId),
    // Pods reach the database inside the cluster; the VPC namespace's network policy
    // decides which pods may. Clients through the external load balancer keep their
    // own address (externalTrafficPolicy: Local), so the allowlist applies to them.
    vpcNetworks: s.clusterNetworks,
    controlPlane: s.clusterNetworks,
    hostAddresses: [],
    externalAccess: db.externalAccessEnabled,
    rules: db.allowlist,
  };
}

/** A restore needs the store the backups are in. */
function storeOf(s: KubernetesSettings) {
  if (!s.backupStore) throw new Error('a database restored from a backup needs the backup store');
  return s.backupStore;
}

export function cnpgCluster(db: ClusterDatabase, s: KubernetesSettings): Manifest {
  const n = names(db.shortId);
  const app = appUserOf(db.shortId);
  const restored = isRestored(db) ? cnpgRecovery(db, storeOf(s)) : undefined;
  return {
    apiVersion: CNPG,
    kind: 'Cluster',
    metadata: meta(db, n.cluster),
    spec: {
      instances: 1 + db.replicas,
      imageName: s.postgresImage(db.version),
      enableSuperuserAccess: false,
      storage: { size: `${db.storageGb}Gi`, ...(s.storageClass ? { storageClass: s.storageClass } : {}) },
      resources: resources(db),
      // The roles below exist in restored data already (the source made them); a fresh
      // database makes them at init.
      bootstrap: restored?.bootstrap ?? {
        initdb: {
          database: db.shortId,
          owner: app,
          secret: { name: n.appSecret },
          postInitApplicationSQL: [
            'CREATE EXTENSION IF NOT EXISTS pg_stat_statements',
            `CREATE ROLE ${CONSOLE_USER} NOLOGIN IN ROLE pg_read_all_stats`,
            `GRANT ${app} TO ${CONSOLE_USER}`,
            `GRANT EXECUTE ON FUNCTION pg_stat_statements_reset(oid, oid, bigint) TO ${CONSOLE_USER}`,
            // Point-in-time restores seal the archive as the console role (domain/backups.ts).
            `GRANT EXECUTE ON FUNCTION pg_switch_wal() TO ${CONSOLE_USER}`,
          ],
        },
      },
      ...(restored ? { externalClusters: restored.externalClusters } : {}),
      ...(s.backupStore ? { backup: cnpgBackupConfig(db, s.backupStore) } : {}),
      // Managed roles keep both passwords equal to their Secrets, so the Secret is the
      // live password the connection endpoint returns.
      managed: {
        roles: [
          { name: app, ensure: 'present', login: true, passwordSecret: { name: n.appSecret } },
          { name: CONSOLE_USER, ensure: 'present', login: true, inRoles: ['pg_read_all_stats', app], passwordSecret: { name: n.consoleSecret } },
          ...(isRestored(db) && renames(db) ? [sourceOwnerRole(db)] : []),
        ],
      },
      postgresql: {
        // Setting pg_stat_statements.* makes CloudNativePG preload the library.
        parameters: { 'pg_stat_statements.track': 'top', 'pg_stat_statements.max': '5000' },
        // CloudNativePG appends its own catch-all line; the final reject keeps it unreached.
        pg_hba: [...pgHbaHostLines(accessPolicy(db, s)), 'host all all all reject'],
      },
    },
  };
}

export function cnpgPooler(db: ClusterDatabase, type: 'rw' | 'ro'): Manifest {
  const n = names(db.shortId);
  return {
    apiVersion: CNPG,
    kind: 'Pooler',
    metadata: meta(db, type === 'rw' ? n.poolerRw : n.poolerRo),
    spec: {
      cluster: { name: n.cluster },
      instances: 1,
      type,
      pgbouncer: { poolMode: 'transaction', parameters: { max_client_conn: '500', default_pool_size: '20' } },
    },
  };
}

export function mocoCluster(db: ClusterDatabase, s: KubernetesSettings): Manifest {
  const n = names(db.shortId);
  return {
    apiVersion: MOCO,
    kind: 'MySQLCluster',
    metadata: meta(db, n.cluster),
    spec: {
      replicas: db.replicas,
      ...(s.backupStore ? { backupPolicyName: n.backupPolicy } : {}),
      ...(isRestored(db) ? { restore: mocoRestore(db, storeOf(s)) } : {}),
      podTemplate: {
        spec: { containers: [{ name: 'mysqld', image: s.mysqlImage(db.version), resources: resources(db) }] },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'mysql-data' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: `${db.storageGb}Gi` } },
            ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
          },
        },
      ],
    },
  };
}

/**
 * MOCO creates no application database or user: this Job does, as `moco-writable`,
 * once the primary answers (it retries until then). Idempotent, so it can be re-applied.
 * The passwords come from the Secrets as env vars, expanded by the shell's here-document.
 */
export function mocoInitJob(db: ClusterDatabase, s: KubernetesSettings): Manifest {
  const n = names(db.shortId);
  const app = appUserOf(db.shortId);
  const dbName = '\\`' + db.shortId + '\\`'; // a backtick escaped for the here-document
  const script = [
    'set -e',
    'cat >/tmp/init.sql <<SQL',
    `CREATE DATABASE IF NOT EXISTS ${dbName};`,
    `CREATE USER IF NOT EXISTS '${app}'@'%' IDENTIFIED BY '$APP_PASSWORD';`,
    `ALTER USER '${app}'@'%' IDENTIFIED BY '$APP_PASSWORD';`,
    `GRANT ALL PRIVILEGES ON ${dbName}.* TO '${app}'@'%';`,
    `CREATE USER IF NOT EXISTS '${CONSOLE_USER}'@'%' IDENTIFIED BY '$CONSOLE_PASSWORD';`,
    `ALTER USER '${CONSOLE_USER}'@'%' IDENTIFIED BY '$CONSOLE_PASSWORD';`,
    `GRANT ALL PRIVILEGES ON ${dbName}.* TO '${CONSOLE_USER}'@'%';`,
    `GRANT SELECT ON performance_schema.* TO '${CONSOLE_USER}'@'%';`,
    'SQL',
    `mysql -h ${n.mocoPrimary} -u moco-writable -p"$WRITABLE_PASSWORD" </tmp/init.sql`,
  ].join('\n');
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(db, n.initJob),
    spec: {
      backoffLimit: 60,
      template: {
        metadata: { labels: meta(db, n.initJob).labels },
        spec: {
          restartPolicy: 'OnFailure',
          securityContext: restrictedPodSecurity(JOB_USER),
          containers: [
            {
              name: 'init',
              image: s.mysqlImage(db.version),
              securityContext: RESTRICTED_CONTAINER_SECURITY,
              command: ['sh', '-c', script],
              env: [
                secretEnv('WRITABLE_PASSWORD', n.mocoSecret, 'WRITABLE_PASSWORD'),
                secretEnv('APP_PASSWORD', n.appSecret, 'password'),
                secretEnv('CONSOLE_PASSWORD', n.consoleSecret, 'password'),
              ],
            },
          ],
        },
      },
    },
  };
}

/**
 * External access: a LoadBalancer per endpoint. externalTrafficPolicy Local keeps the
 * client's address (so pg_hba sees it), loadBalancerSourceRanges applies the allowlist
 * at the balancer too, and external-dns publishes `<short_id>.<domain>` when a domain is set.
 */
export function externalService(db: ClusterDatabase, readOnly: boolean, hostname: string | undefined): Manifest {
  const n = names(db.shortId);
  const port = db.engine === 'postgresql' ? 5432 : 3306;
  const selector =
    db.engine === 'postgresql'
      ? readOnly
        ? { 'cnpg.io/cluster': n.cluster, 'cnpg.io/podRole': 'instance' }
        : { 'cnpg.io/cluster': n.cluster, 'cnpg.io/instanceRole': 'primary' }
      : { 'app.kubernetes.io/name': 'mysql', 'app.kubernetes.io/instance': n.cluster, ...(readOnly ? {} : { 'moco.cybozu.com/role': 'primary' }) };
  const metadata = meta(db, readOnly ? n.externalRo : n.external);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: hostname ? { ...metadata, annotations: { 'external-dns.alpha.kubernetes.io/hostname': hostname } } : metadata,
    spec: {
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      selector,
      ports: [{ name: db.engine, port, targetPort: port, protocol: 'TCP' }],
      ...(db.allowlist.length ? { loadBalancerSourceRanges: db.allowlist } : {}),
    },
  };
}
