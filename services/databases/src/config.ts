import { z } from 'zod';
import { serviceEnv, port, loadConfig, checkS3StoreEnv, s3StoreEnv } from '@pier/kit';
import { parseOperatorSetting } from './cluster/kubernetes-modes.ts';

/** The variables' common prefix of the backup repository's S3 store. */
export const S3 = 'PIER_DATABASES_BACKUP_S3';

const hostname = (name: string) =>
  z.string().regex(/^(?=.{1,200}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/, `${name} must be a DNS domain such as db.example.com`);

export const databasesEnv = serviceEnv.extend({
  PIER_DATABASES_HTTP_PORT: port(7103),
  PIER_CLUSTER: z.enum(['docker', 'kubernetes']).default('docker'),
  /**
   * External host names are `<short_id>.<domain>` when set (point a wildcard DNS record at the
   * cluster). Unset (the local default), external hosts are the address the cluster reports:
   * the host's own on docker, so the details work on the machine with no DNS at all.
   */
  PIER_POSTGRES_EXTERNAL_DOMAIN: hostname('PIER_POSTGRES_EXTERNAL_DOMAIN').optional(),
  PIER_MYSQL_EXTERNAL_DOMAIN: hostname('PIER_MYSQL_EXTERNAL_DOMAIN').optional(),
  /** docker, and kubernetes' built-in mode: images of the two engines (built by deploy/images/build.sh). */
  PIER_DATABASES_POSTGRES_IMAGE: z.string().min(1).default('pier/pg-managed:15'),
  PIER_DATABASES_MYSQL_IMAGE: z.string().min(1).default('pier/mariadb:10.11'),
  /** docker: extra labels on everything the adapter creates, `k=v,k2=v2` (test runs mark theirs). */
  PIER_DATABASES_CONTAINER_LABELS: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const labels: Record<string, string> = {};
      for (const pair of v
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const i = pair.indexOf('=');
        if (i <= 0) {
          ctx.addIssue({ code: 'custom', message: `PIER_DATABASES_CONTAINER_LABELS: "${pair}" is not key=value` });
          return z.NEVER;
        }
        labels[pair.slice(0, i)] = pair.slice(i + 1);
      }
      return labels;
    }),
  /**
   * docker: host address external-access ports are published on. The external address
   * given to clients is this one, or 127.0.0.1 when it is a wildcard (0.0.0.0, ::).
   */
  PIER_DATABASES_PUBLISH_ADDRESS: z.string().min(1).default('0.0.0.0'),
  /**
   * docker, with PIER_POSTGRES_EXTERNAL_DOMAIN: the port of Pier's PostgreSQL listener,
   * which routes every database's external clients by TLS server name (SNI), on
   * PIER_DATABASES_PUBLISH_ADDRESS (0: any free port, as tests use).
   */
  PIER_DATABASES_POSTGRES_EXTERNAL_PORT: port(5432),
  /** kubernetes: kubeconfig file; without it the in-cluster service account (or $KUBECONFIG). */
  PIER_KUBECONFIG: z.string().min(1).optional(),
  /**
   * kubernetes: how each engine runs (cluster/kubernetes-modes.ts): `cloudnative-pg`, `moco`,
   * `none` (Pier runs the engine itself from the images above), or per engine
   * `postgresql=none,mysql=moco`. An engine left out takes its operator when the cluster
   * serves its CRD, else `none`.
   */
  PIER_DATABASES_KUBERNETES_OPERATOR: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const parsed = parseOperatorSetting(v);
      if (typeof parsed === 'string') {
        ctx.addIssue({ code: 'custom', message: `PIER_DATABASES_KUBERNETES_OPERATOR: ${parsed}` });
        return z.NEVER;
      }
      return parsed;
    }),
  /** kubernetes, built-in mode: the Service type of external access (NodePort where no load balancer is). */
  PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE: z.enum(['LoadBalancer', 'NodePort']).default('LoadBalancer'),
  /**
   * kubernetes, built-in mode: keep watch-fed copies of the databases' StatefulSets and pods,
   * so observing a VPC makes no API call. `off`: list them on every observation.
   */
  PIER_DATABASES_KUBE_WATCH: z.enum(['on', 'off']).default('on'),
  /** kubernetes, built-in mode with NodePort: the address clients outside dial (default: the first node's). */
  PIER_DATABASES_KUBERNETES_EXTERNAL_ADDRESS: z.string().min(1).optional(),
  /**
   * kubernetes: the networks pods (and so the control plane) connect from, comma-separated
   * CIDRs; clients there are inside, any other address is judged by the allowlist. Set it to
   * the cluster's pod network (default: every private range).
   */
  PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const cidrs = v
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean);
      for (const c of cidrs) {
        if (!/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(c)) {
          ctx.addIssue({ code: 'custom', message: `PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS: "${c}" is not a CIDR` });
          return z.NEVER;
        }
      }
      return cidrs.length ? cidrs : undefined;
    }),
  /** kubernetes: StorageClass of database volumes (cluster default when unset). */
  PIER_DATABASES_STORAGE_CLASS: z.string().min(1).optional(),
  /** SQL console: statement timeout and the most rows one query returns. */
  PIER_DATABASES_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(5000),
  PIER_DATABASES_QUERY_ROW_CAP: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** A database not healthy this long after provisioning goes to `error`. */
  PIER_DATABASES_PROVISION_TIMEOUT_SECONDS: z.coerce.number().int().min(10).default(600),
  /** How often the reconciler settles what is pending, tears down, resyncs and sweeps. */
  PIER_DATABASES_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
  /**
   * Pending state younger than this may belong to a request still in flight (a server
   * restart on an external-access toggle takes up to 90 s), so the reconciler leaves it
   * alone (at start-up it takes everything: nothing is in flight). Default 120 (pendingGraceMs).
   */
  PIER_DATABASES_PENDING_GRACE_SECONDS: z.coerce.number().min(0, 'PIER_DATABASES_PENDING_GRACE_SECONDS must be 0 or more').optional(),
  /** Deprecated: PIER_DATABASES_PENDING_GRACE_SECONDS in milliseconds, read when that one is unset. */
  PIER_DATABASES_PENDING_GRACE_MS: z.coerce.number().int().min(0).optional(),
  /** How often the reconciler lists the cluster for objects no record accounts for (and at start-up). */
  PIER_DATABASES_SWEEP_INTERVAL_SECONDS: z.coerce.number().positive('PIER_DATABASES_SWEEP_INTERVAL_SECONDS must be above 0').default(20),
  /** auth's gRPC address (host:port): a fork into another VPC asks it whether that VPC is the caller's workspace's. */
  PIER_AUTH_GRPC_URL: z.string().min(1).optional(),
  /**
   * docker: the named volume holding the backup repository, each database under a path of
   * its own; unused when an S3 store is configured.
   */
  PIER_DATABASES_BACKUP_VOLUME: z
    .string()
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/, 'PIER_DATABASES_BACKUP_VOLUME must be a Docker volume name')
    .default('pier-database-backups'),
  /**
   * An S3-compatible object store for the backup repository, instead of the volume (kit's
   * s3StoreEnv: PIER_DATABASES_BACKUP_S3_ENDPOINT, _BUCKET, _REGION, _ACCESS_KEY_ID,
   * _SECRET_ACCESS_KEY, _CA_FILE, _PREFIX): https only, as pgBackRest 2.45 speaks TLS only.
   * Every database's repository is `<prefix>/<database id>` in the bucket.
   */
  ...s3StoreEnv(S3, 'pier-databases'),
  /** A deleted database's backups and archive are kept this long (default 7 days), then purged. */
  PIER_DATABASES_DELETED_BACKUP_RETENTION_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(7 * 24 * 3600),
  /** How often due backup schedules, running backups, retention and purges are looked at. */
  PIER_DATABASES_BACKUP_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
});

/** An S3 store is all or nothing: an endpoint without its bucket or keys is a configuration error, named. */
const checkedEnv = databasesEnv.superRefine((env, ctx) => checkS3StoreEnv(S3, env, ctx));

export type DatabasesConfig = z.infer<typeof databasesEnv>;

/** The reconciler's grace: the seconds setting, else the deprecated milliseconds one, else 120 s. */
export function pendingGraceMs(config: DatabasesConfig): number {
  if (config.PIER_DATABASES_PENDING_GRACE_SECONDS !== undefined) return config.PIER_DATABASES_PENDING_GRACE_SECONDS * 1000;
  return config.PIER_DATABASES_PENDING_GRACE_MS ?? 120_000;
}

export const readConfig = (env: NodeJS.ProcessEnv = process.env): DatabasesConfig => loadConfig(checkedEnv, env);
