// The audit trail, every write: each write operation the OpenAPI document lists is made for
// real through the gateway with the Owner's API key, and the event it leaves in
// GET /workspaces/{ws}/events must name that user, that key and the address the gateway
// saw. A write added to the API without a step here fails the last test; the few writes
// that change nothing the audit log records are listed in NOT_AUDITED with the reason.
// Each step waits for an event it has not matched before, of the type it expects, on the
// resource it touched, so one step's event never passes for another's.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ev } from './events-support.ts';
import { RUN_LABELS, TEST_BACKUP_VOLUME, testEdge, until } from '@pier/testing';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { operationsOf } from '../support/operations.ts';
import { DATABASES_ENV, cleanupVpc, localAddress } from './databases-helpers.ts';
import { cleanVpcs, dockerCli, TINY_HTTP } from './services-support.ts';

const WS = '/api/v1/workspaces/{workspaceID}';
const VPC = `${WS}/vpcs/{vpcID}`;
const SVC = `${VPC}/services/{serviceID}`;
const DB = `${VPC}/databases/{databaseID}`;

/** Writes that leave no audit event, and why. */
const NOT_AUDITED: Record<string, string> = {
  'POST /api/v1/cli-sessions': "a person's own sign-in on a machine, outside any workspace (the session is the credential later events name)",
  'DELETE /api/v1/cli-sessions/{sessionID}': "a person's own sign-out, outside any workspace",
  [`POST ${WS}/webhooks/{webhookID}/test`]: 'sends a webhook.test to the endpoint and changes nothing; the attempt is in its deliveries',
  [`POST ${WS}/webhooks/{webhookID}/deliveries/{deliveryID}/redeliver`]: 'sends an event again; the attempt is in its deliveries',
};

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let events: string;
let userId: string;
let workDir: string;
let slowGit: Server;
const edge = testEdge('apps.audit.test');
const covered = new Set<string>();
const matched = new Set<string>();
const vpcsMade: string[] = [];

beforeAll(async () => {
  await dockerCli('volume', 'create', ...RUN_LABELS.flatMap((l) => ['--label', l]), TEST_BACKUP_VOLUME);
  // A git server that never answers: a build of it stays running until it is cancelled.
  slowGit = createServer(() => undefined);
  await new Promise<void>((resolve) => slowGit.listen(0, '0.0.0.0', resolve));
  oidc = await startOidcProvider();
  workDir = await mkdtemp(path.join(tmpdir(), 'pier-audit-'));
  p = await startPlatform({
    env: {
      auth: oidc.env,
      compute: {
        ...edge.env,
        PIER_COMPUTE_BACKUP_VOLUME: TEST_BACKUP_VOLUME,
        PIER_BUILD_ALLOWED_HOSTS: localAddress(),
        PIER_BUILD_ALLOW_HTTP: 'true',
        PIER_BUILD_WORK_DIR: path.join(workDir, 'builds'),
        PIER_BUILD_INTERVAL_MS: '300',
      },
      databases: DATABASES_ENV,
      events: { PIER_EVENTS_WEBHOOK_ALLOW_HTTP: 'true', PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
    },
  });
  owner = p.api(p.bootstrap.token);
  events = `/api/v1/workspaces/${p.bootstrap.workspaceId}/events`;
  userId = (await owner.get('/api/v1/me')).body.id;
}, 180_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  await edge.remove();
  slowGit?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  if (p) {
    const vpcs = [p.bootstrap.vpcId, ...vpcsMade];
    await Promise.all([cleanVpcs(...vpcs), ...vpcs.map((v) => cleanupVpc(v))]);
  }
}, 120_000);

interface Step {
  /** The operation, as `METHOD /path/{template}` of the OpenAPI document. */
  op: string;
  /** Event types any of which records this write. */
  types: string[];
  call: () => Promise<{ status: number; body: any }>;
  /** The resource the event is about (default: the answer's `id`). */
  resource?: (body: any) => string;
  /** The workspace whose log holds the event (default: the bootstrap one). */
  workspace?: (body: any) => string;
}

/** Makes the write, then waits for its event: new, of one of `types`, on the resource, naming the Owner's key. */
async function audited(step: Step): Promise<any> {
  const r = await step.call();
  expect(r.status, `${step.op}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
  const resourceId = step.resource ? step.resource(r.body) : r.body.id;
  const log = step.workspace ? `/api/v1/workspaces/${step.workspace(r.body)}/events` : events;
  const e = await until(
    async () =>
      ((await owner.get(`${log}?resource_id=${resourceId}&limit=100`)).body.items as Ev[]).find(
        (x) => !matched.has(x.id) && step.types.includes(x.type) && x.actor !== null,
      ),
    (x) => x !== undefined,
    30_000,
    200,
  ).catch(async () => {
    const seen = ((await owner.get(`${log}?resource_id=${resourceId}&limit=100`)).body.items as Ev[]).map((x) => `${x.type}${x.actor ? '' : ' (platform)'}`);
    throw new Error(`${step.op}: no new ${step.types.join('|')} event with an actor on ${resourceId}; there are: ${seen.join(', ')}`);
  });
  matched.add(e!.id);
  expect(e!.actor, step.op).toEqual({ user_id: userId, email: p.bootstrap.email, credential: { kind: 'api_key', id: expect.any(String), name: 'bootstrap' } });
  expect(e!.source_ip, step.op).toBe('127.0.0.1');
  expect(e!.resource.id, step.op).toBe(resourceId);
  covered.add(step.op);
  return r.body;
}

describe('the audit trail of every write', () => {
  it('workspaces, API keys, members and VPCs', async () => {
    const ws = await audited({
      op: `POST /api/v1/workspaces`,
      types: ['workspace.created'],
      call: () => owner.post('/api/v1/workspaces', { name: 'audited-ws' }),
      workspace: (b) => b.id,
    });
    vpcsMade.push(ws.default_vpc_id);
    const wsPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}`;
    const key = await audited({ op: `POST ${WS}/api-keys`, types: ['api_key.created'], call: () => owner.post(`${wsPath}/api-keys`, { name: 'audited' }) });
    await audited({
      op: `DELETE ${WS}/api-keys/{keyID}`,
      types: ['api_key.revoked'],
      call: () => owner.delete(`${wsPath}/api-keys/${key.id}`),
      resource: () => key.id,
    });
    expect((await p.api(await oidc.sign('audited-member@example.com')).get('/api/v1/me')).status).toBe(200);
    const member = await audited({
      op: `POST ${WS}/members`,
      types: ['member.added'],
      call: () => owner.post(`${wsPath}/members`, { email: 'audited-member@example.com', role: 'viewer' }),
      resource: (b) => b.user_id,
    });
    const memberPath = `${wsPath}/members/${member.user_id}`;
    await audited({
      op: `PATCH ${WS}/members/{userID}`,
      types: ['member.role_changed'],
      call: () => owner.patch(memberPath, { role: 'developer' }),
      resource: () => member.user_id,
    });
    await audited({ op: `DELETE ${WS}/members/{userID}`, types: ['member.removed'], call: () => owner.delete(memberPath), resource: () => member.user_id });
    const vpc = await audited({ op: `POST ${WS}/vpcs`, types: ['vpc.created'], call: () => owner.post(`${wsPath}/vpcs`, { name: 'audited-vpc' }) });
    vpcsMade.push(vpc.id);
    await audited({ op: `DELETE ${WS}/vpcs/{vpcID}`, types: ['vpc.deleted'], call: () => owner.delete(`${wsPath}/vpcs/${vpc.id}`), resource: () => vpc.id });
  });

  it('secrets and webhooks', async () => {
    const wsPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}`;
    const secrets = `${wsPath}/vpcs/${p.bootstrap.vpcId}/secrets`;
    const secret = await audited({
      op: `POST ${VPC}/secrets`,
      types: ['secret.created'],
      call: () => owner.post(secrets, { name: 'audited', values: { A: 'b' } }),
    });
    await audited({
      op: `DELETE ${VPC}/secrets/{secretID}`,
      types: ['secret.deleted'],
      call: () => owner.delete(`${secrets}/${secret.id}`),
      resource: () => secret.id,
    });
    const hooks = `${wsPath}/webhooks`;
    const hook = await audited({
      op: `POST ${WS}/webhooks`,
      types: ['webhook.created'],
      call: () => owner.post(hooks, { url: 'http://127.0.0.1:9/hook', events: ['service.*'] }),
    });
    await audited({
      op: `PATCH ${WS}/webhooks/{webhookID}`,
      types: ['webhook.updated'],
      call: () => owner.patch(`${hooks}/${hook.id}`, { description: 'audited' }),
      resource: () => hook.id,
    });
    await audited({
      op: `POST ${WS}/webhooks/{webhookID}/rotate-secret`,
      types: ['webhook.secret_rotated'],
      call: () => owner.post(`${hooks}/${hook.id}/rotate-secret`),
      resource: () => hook.id,
    });
    await audited({
      op: `DELETE ${WS}/webhooks/{webhookID}`,
      types: ['webhook.deleted'],
      call: () => owner.delete(`${hooks}/${hook.id}`),
      resource: () => hook.id,
    });
  });

  it('a service and every one of its sub-resources', async () => {
    const base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
    const svc = await audited({
      op: `POST ${VPC}/services`,
      types: ['service.created'],
      call: () => owner.post(base, { name: 'audited-web', image: TINY_HTTP, port: 8080, disk_size_gb: 1, disk_mount_path: '/data' }),
    });
    const s = `${base}/${svc.id}`;
    const on = () => svc.id;
    await until(
      async () => (await owner.get(s)).body.status,
      (st) => st === 'running',
      60_000,
    );
    const deploy = (op: string, call: Step['call']) => audited({ op, types: ['service.deployment_requested'], call, resource: on });
    await audited({ op: `PATCH ${SVC}`, types: ['service.updated'], call: () => owner.patch(s, { health_check_path: '/' }), resource: on });
    await deploy(`POST ${SVC}/deploy`, () => owner.post(`${s}/deploy`, { image_tag: '1' }));
    await deploy(`POST ${SVC}/restart`, () => owner.post(`${s}/restart`));
    const first = ((await owner.get(`${s}/deployments?limit=100`)).body.items as { id: string; created_at: string }[]).at(-1)!;
    await deploy(`POST ${SVC}/rollback`, () => owner.post(`${s}/rollback`, { deployment_id: first.id }));
    const env = await deploy(`PUT ${SVC}/env`, () => owner.put(`${s}/env`, { variables: [{ key: 'GREETING', value: 'hello' }] }));
    await deploy(`DELETE ${SVC}/env/{envVarID}`, () => owner.delete(`${s}/env/${env.variables[0].id}`));

    const domain = await audited({
      op: `POST ${SVC}/domains`,
      types: ['service.domain.added'],
      call: () => owner.post(`${s}/domains`, { hostname: 'audited.example.com' }),
      resource: on,
    });
    // No DNS points the name here: the check fails, and says so in the log.
    await audited({
      op: `POST ${SVC}/domains/{domainID}/verify`,
      types: ['service.domain.failed', 'service.domain.verified', 'service.domain.active'],
      call: () => owner.post(`${s}/domains/${domain.id}/verify`),
      resource: on,
    });
    await audited({
      op: `DELETE ${SVC}/domains/{domainID}`,
      types: ['service.domain.removed'],
      call: () => owner.delete(`${s}/domains/${domain.id}`),
      resource: on,
    });

    await audited({ op: `POST ${SVC}/uptime`, types: ['service.uptime.enabled'], call: () => owner.post(`${s}/uptime`, {}), resource: on });
    await audited({ op: `DELETE ${SVC}/uptime`, types: ['service.uptime.disabled'], call: () => owner.delete(`${s}/uptime`), resource: on });

    const backup = await audited({
      op: `POST ${SVC}/backups`,
      types: ['service.backup.started', 'service.backup.completed'],
      call: () => owner.post(`${s}/backups`),
      resource: on,
    });
    await until(
      async () => ((await owner.get(`${s}/backups`)).body.items as { id: string; status: string }[]).find((b) => b.id === backup.id)?.status,
      (st) => st === 'completed',
      60_000,
    );
    await audited({
      op: `PUT ${SVC}/backups/schedule`,
      types: ['service.backup.schedule_set'],
      call: () => owner.put(`${s}/backups/schedule`, { schedule: '0 3 * * *' }),
      resource: on,
    });
    await audited({
      op: `DELETE ${SVC}/backups/schedule`,
      types: ['service.backup.schedule_deleted'],
      call: () => owner.delete(`${s}/backups/schedule`),
      resource: on,
    });
    await audited({
      op: `POST ${SVC}/backups/restore`,
      types: ['service.backup.restore_started', 'service.backup.restored'],
      call: () => owner.post(`${s}/backups/restore`, { backup_id: backup.id }),
      resource: on,
    });
    await until(
      async () => (await owner.get(s)).body.status,
      (st) => st === 'running',
      60_000,
    );

    const source = path.join(workDir, 'source');
    await mkdir(source);
    await writeFile(path.join(source, 'Dockerfile'), `FROM ${TINY_HTTP}\n`);
    const { tarDirectory } = await import('../../packages/cli/src/commands/builds.ts');
    const tar = new Uint8Array(await tarDirectory(source));
    await audited({
      op: `POST ${SVC}/builds/source-upload`,
      types: ['service.build.queued'],
      call: async () => {
        const res = await fetch(`${p.gatewayUrl}${s}/builds/source-upload?deploy=false`, {
          method: 'POST',
          headers: { authorization: `Bearer ${p.bootstrap.token}`, 'content-type': 'application/gzip' },
          body: tar,
        });
        return { status: res.status, body: await res.json() };
      },
      resource: on,
    });
    const { port } = slowGit.address() as { port: number };
    const build = await audited({
      op: `POST ${SVC}/builds/git`,
      types: ['service.build.queued'],
      call: () => owner.post(`${s}/builds/git`, { repo_url: `http://${localAddress()}:${port}/never.git`, deploy: false }),
      resource: on,
    });
    await audited({
      op: `POST ${SVC}/builds/{buildID}/cancel`,
      types: ['service.build.cancelled', 'service.build.cancel_requested'],
      call: () => owner.post(`${s}/builds/${build.id}/cancel`),
      resource: on,
    });
    await audited({ op: `DELETE ${SVC}`, types: ['service.deleted'], call: () => owner.delete(s), resource: on });
  }, 300_000);

  it('a database and every one of its sub-resources', async () => {
    const base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/databases`;
    const db = await audited({ op: `POST ${VPC}/databases`, types: ['database.created'], call: () => owner.post(base, { name: 'audited-pg' }) });
    const d = `${base}/${db.id}`;
    const on = () => db.id;
    const running = (path: string) =>
      until(
        async () => (await owner.get(path)).body.status,
        (st) => st === 'running',
        120_000,
      );
    await running(d);
    await audited({ op: `PATCH ${DB}`, types: ['database.updated'], call: () => owner.patch(d, { name: 'audited-pg-2' }), resource: on });
    await audited({ op: `PATCH ${DB}/replicas`, types: ['database.updated'], call: () => owner.patch(`${d}/replicas`, { replicas: 1 }), resource: on });
    const rule = await audited({
      op: `POST ${DB}/ip-allowlist`,
      types: ['database.allowlist_rule_added'],
      call: () => owner.post(`${d}/ip-allowlist`, { cidr: '10.9.0.0/16' }),
      resource: on,
    });
    await audited({
      op: `DELETE ${DB}/ip-allowlist/{ruleID}`,
      types: ['database.allowlist_rule_removed'],
      call: () => owner.delete(`${d}/ip-allowlist/${rule.id}`),
      resource: on,
    });
    await audited({
      op: `POST ${DB}/query`,
      types: ['database.query_run'],
      call: () => owner.post(`${d}/query`, { sql: "select 'audited-statement'" }),
      resource: on,
    });
    await audited({
      op: `POST ${DB}/slow-queries/reset`,
      types: ['database.slow_queries_reset'],
      call: () => owner.post(`${d}/slow-queries/reset`),
      resource: on,
    });
    await audited({
      op: `PATCH ${DB}/backups/schedule`,
      types: ['database.backup_schedule_updated'],
      call: () => owner.patch(`${d}/backups/schedule`, { retention_count: 5 }),
      resource: on,
    });
    const backup = await audited({ op: `POST ${DB}/backups`, types: ['database.backup_started'], call: () => owner.post(`${d}/backups`), resource: on });
    const completed = (name: string) =>
      until(
        async () => ((await owner.get(`${d}/backups`)).body.items as { name: string; status: string }[]).find((b) => b.name === name)?.status,
        (st) => st === 'completed',
        120_000,
      );
    await completed(backup.name);
    const restored = await audited({
      op: `POST ${DB}/backups/restore`,
      types: ['database.created'],
      call: () => owner.post(`${d}/backups/restore`, { name: 'audited-restored', backup_name: backup.name }),
    });
    const other = (await owner.post(`/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs`, { name: 'audited-fork' })).body;
    vpcsMade.push(other.id);
    const fork = await audited({
      op: `POST ${DB}/fork`,
      types: ['database.created'],
      call: () => owner.post(`${d}/fork`, { name: 'audited-fork', target_vpc_id: other.id }),
    });
    // The newest completed backup anchors point-in-time recovery: a newer one lets the first go.
    await completed((await owner.post(`${d}/backups`)).body.name);
    // Nor may a backup go while a database is restored from this one's backups (the restore
    // and the fork): under a loaded CI run the fork was still restoring at this point (409).
    const restoredPath = `${base}/${restored.id}`;
    const forkPath = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${other.id}/databases/${fork.id}`;
    await running(restoredPath);
    await running(forkPath);
    await audited({
      op: `DELETE ${DB}/backups/{backupName}`,
      types: ['database.backup_deleted'],
      call: () => owner.delete(`${d}/backups/${backup.name}`),
      resource: on,
    });
    for (const [path, id] of [
      [restoredPath, restored.id],
      [forkPath, fork.id],
    ] as const) {
      await audited({ op: `DELETE ${DB}`, types: ['database.deleted'], call: () => owner.delete(path), resource: () => id });
    }
    // The statement itself is never in the log.
    const all = JSON.stringify((await owner.get(`${events}?resource_id=${db.id}&limit=200`)).body.items);
    expect(all).not.toContain('audited-statement');
  }, 600_000);

  it('covers every write operation of the OpenAPI document', async () => {
    const doc = (await p.api().get('/api/v1/openapi.json')).body;
    const writes = operationsOf(doc)
      .filter((o) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(o.method.toUpperCase()))
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    const missing = writes.filter((w) => !covered.has(w) && !(w in NOT_AUDITED));
    expect(missing, 'writes without an audited step').toEqual([]);
    expect(
      Object.keys(NOT_AUDITED).filter((w) => !writes.includes(w)),
      'NOT_AUDITED names no such write',
    ).toEqual([]);
  });
});
