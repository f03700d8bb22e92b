/**
 * The databases service on its own, for its service-level tests: the shared harness
 * (fresh database, the suite's NATS, identity tokens for any role) and the real Docker
 * engine, or a cluster adapter the test builds. Crash tests run it as a child process
 * (spawnDatabases) so it can be killed for real.
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { expect } from 'vitest';
import { importIdentityKey, signIdentity, IDENTITY_HEADER, type RunningService } from '@pier/kit';
import {
  adminQuery,
  docker,
  infra,
  removeVpcObjects,
  spawnService,
  startServiceUnderTest,
  testLabels,
  TEST_BACKUP_VOLUME,
  type IdentityKeys,
  type ServiceProcess,
  type ServiceUnderTest,
  type TestDatabase,
} from '@pier/testing';
import { start, readConfig, type StartOptions } from '../src/index.ts';
import { DockerCluster, type DockerClusterOptions } from '../src/cluster/docker.ts';

export { infra, until, docker, adminQuery, removeVpcObjects, type TestDatabase } from '@pier/testing';
import { until } from '@pier/testing';

/** The suite's labels on everything the docker adapter makes (./pier test removes what carries its run's). */
export const CONTAINER_LABELS = Object.entries(testLabels())
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** The docker adapter's backup repository in these tests: the run's volume. */
export const BACKUP_REPOSITORY = { kind: 'volume', volume: TEST_BACKUP_VOLUME } as const;

/**
 * A docker adapter as the tests build it themselves (to count its calls, cut its socket,
 * wrap a method): the local images, the run's labels and repository, and `over`.
 */
export function testDockerCluster(over: Partial<DockerClusterOptions> = {}): DockerCluster {
  return new DockerCluster({
    labels: testLabels(),
    postgresImage: 'pier/pg-managed:15',
    mysqlImage: 'pier/mariadb:10.11',
    publishAddress: '127.0.0.1',
    repository: BACKUP_REPOSITORY,
    ...over,
  });
}

export interface Databases extends ServiceUnderTest<RunningService> {
  /** Base path of the databases API in the harness's workspace/VPC. */
  base: string;
}

/** The databases service in this process, on a fresh database, called as an Owner by default. */
export async function startDatabases(env: Record<string, string> = {}, options: Omit<StartOptions, 'logDestination'> = {}): Promise<Databases> {
  const h = await startServiceUnderTest({
    schema: 'databases',
    start: (e, logs) => start(readConfig(e), { ...options, logDestination: logs }),
    env: {
      PIER_DATABASES_HTTP_PORT: '0',
      PIER_DATABASES_RECONCILE_INTERVAL_MS: '500',
      PIER_DATABASES_PENDING_GRACE_SECONDS: '1',
      PIER_DATABASES_SWEEP_INTERVAL_SECONDS: '5',
      PIER_DATABASES_CONTAINER_LABELS: CONTAINER_LABELS,
      PIER_DATABASES_BACKUP_VOLUME: TEST_BACKUP_VOLUME,
      ...env,
    },
  });
  const stopService = h.stop;
  return Object.assign(h, {
    base: `/api/v1/workspaces/${h.workspaceId}/vpcs/${h.vpcId}/databases`,
    async stop() {
      await stopService();
      await removeVpcObjects(h.vpcId);
    },
  });
}

/** One databases service process (see spawnDatabases); `call` works across its restarts. */
export interface DatabasesProcess {
  db: TestDatabase;
  workspaceId: string;
  vpcId: string;
  base: string;
  proc: ServiceProcess;
  /** Starts the process (again) on the same database, with `env` over the common settings. */
  spawn(env?: Record<string, string>): Promise<ServiceProcess>;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
  /** One query as the superuser of the service's database. */
  sql(query: string, params?: unknown[]): Promise<any[]>;
  stop(): Promise<void>;
}

/**
 * The databases service as a child process, as in production, on a fresh database that
 * outlives it: a test arms a crash point (PIER_CRASH_AT) for the first process, lets it
 * die, and spawns the next on the same records.
 */
export async function spawnDatabases(keys: IdentityKeys, db: TestDatabase): Promise<DatabasesProcess> {
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const key = await importIdentityKey(keys.privateJwk);
  const token = await signIdentity(key, { kind: 'user', subject: randomUUID(), email: 'owner@example.test', role: 'owner', workspaceId, vpcId }, 3600);
  const common = {
    PIER_DATABASE_URL: db.urls.databases,
    PIER_NATS_URL: infra().natsUrl,
    PIER_IDENTITY_PUBLIC_KEY: keys.publicJwk,
    PIER_DATABASES_HTTP_PORT: '0',
    // spawnService learns the port from the "listening" line.
    PIER_LOG_LEVEL: 'info',
    PIER_DATABASES_RECONCILE_INTERVAL_MS: '500',
    PIER_DATABASES_PENDING_GRACE_SECONDS: '1',
    PIER_DATABASES_SWEEP_INTERVAL_SECONDS: '5',
    PIER_DATABASES_CONTAINER_LABELS: CONTAINER_LABELS,
    PIER_DATABASES_BACKUP_VOLUME: TEST_BACKUP_VOLUME,
  };
  const p: DatabasesProcess = {
    db,
    workspaceId,
    vpcId,
    base: `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/databases`,
    proc: undefined as unknown as ServiceProcess,
    async spawn(env = {}) {
      // PIER_CRASH_AT may be in this process's own environment: only `env` arms it.
      p.proc = await spawnService('databases', { ...common, PIER_CRASH_AT: '', ...env });
      return p.proc;
    },
    async call(method, path, body, headers = {}) {
      const res = await fetch(`http://127.0.0.1:${p.proc.httpPort}${path}`, {
        method,
        headers: { [IDENTITY_HEADER]: token, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
    },
    sql: (query, params = []) => adminQuery(db.adminUrl, query, params),
    async stop() {
      await p.proc?.stop();
      await removeVpcObjects(vpcId);
    },
  };
  return p;
}

/** The pg_hba.conf a docker-run PostgreSQL database is running with (the allowlist rendered). */
export function pgHba(databaseId: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('docker', ['exec', `pier-db-${databaseId}`, 'cat', '/var/lib/postgresql/data/pier/pg_hba.conf'], (err, out) =>
      err ? reject(err) : resolve(String(out)),
    ),
  );
}

/** Names of the containers and volumes that carry this installation's label, in one VPC. */
export async function installationObjects(installation: string, vpcId: string): Promise<{ containers: string[]; volumes: string[] }> {
  const filters = JSON.stringify({ label: [`pier.installation=${installation}`, `pier.vpc=${vpcId}`] });
  const containers = (await docker.listContainers({ all: true, filters })).map((c) => c.Names[0]!.replace(/^\//, ''));
  const volumes = ((await docker.listVolumes({ filters })).Volumes ?? []).map((v) => v.Name);
  return { containers: containers.sort(), volumes: volumes.sort() };
}

/** The field a domain error names (InputError details), or undefined when it throws none. */
export function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { details?: { field?: string } }).details?.field;
  }
  return undefined;
}

/** What the backup, restore and replica tests ask of the API, as a user would check it. */
export function databaseChecks(h: Databases) {
  const one = (id: string) => `${h.base}/${id}`;
  const backups = async (id: string): Promise<any> => {
    const r = await h.get(`${one(id)}/backups`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  return {
    one,
    backups,
    /** Polls until the database runs (an `error` fails at once, with the record). */
    async running(id: string): Promise<void> {
      const d = await until(
        () => h.get(one(id)).then((r) => r.body),
        (x) => x.status === 'running' || x.status === 'error',
        120_000,
      );
      expect(d, JSON.stringify(d)).toMatchObject({ status: 'running' });
    },
    /** External URL of a database (external access turned on for the check). */
    async externalUrl(id: string): Promise<string> {
      const patched = await h.request('PATCH', one(id), { external_access_enabled: true });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      return (await h.get(`${one(id)}/connection`)).body.external_url;
    },
    /** Polls until backup `name` of `id` has finished, and expects it completed. */
    async completed(id: string, name: string): Promise<any> {
      const b = await until(
        () => backups(id).then((l) => l.items.find((x: any) => x.name === name)),
        (x) => x?.status === 'completed' || x?.status === 'failed',
        120_000,
      );
      expect(b, JSON.stringify(b)).toMatchObject({ status: 'completed' });
      return b;
    },
  };
}
