import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

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
  /** docker: images of the two engines (built by deploy/images/build.sh). */
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
  /** kubernetes: kubeconfig file; without it the in-cluster service account (or $KUBECONFIG). */
  PIER_KUBECONFIG: z.string().min(1).optional(),
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
   * Pending state younger than this may belong to a request still in flight, so the
   * reconciler leaves it alone (at start-up it takes everything: nothing is in flight).
   */
  PIER_DATABASES_PENDING_GRACE_MS: z.coerce.number().int().min(0).default(120_000),
});

export type DatabasesConfig = z.infer<typeof databasesEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): DatabasesConfig => loadConfig(databasesEnv, env);
