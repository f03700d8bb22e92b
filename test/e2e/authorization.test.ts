// Authorization, every route: a generated test. It reads the merged OpenAPI document of a
// running platform and calls EVERY operation in it as each kind of caller — no token,
// tokens that name nobody (an API key, a JWT and a CLI session token of the right shape), a
// revoked key, an expired key, a Viewer, a Developer, an Admin, the Owner, and a member of
// another workspace (on our paths with our ids, and on their own paths with our ids) — and
// checks each answer against the role rules of the API contract. A route added later
// without its guard, or with the wrong one, fails here; so does one the document lists
// without the role it should have (`x-pier-role`) or without its 401/403/404.
//
// The rules (docs: the contract's roles section and endpoint tables):
// - reads (GET) under a workspace: any member; writes (POST/PUT/PATCH/DELETE): Owner or
//   Admin, others 403 `insufficient workspace permissions`. Exceptions the tables name:
//   listing API keys and a database's schema are Owner/Admin reads; the shell (exec) reads
//   every secret a container holds and is Owner/Admin too.
// - routes without a workspace in the path (/me, /workspaces, /cli-sessions) belong to the
//   caller: any authenticated user, and another user's resource id answers 404.
// - no token, a malformed, revoked or expired token: 401.
// - a workspace the caller is not a member of, a VPC outside the workspace in the path, and
//   a resource outside the VPC in the path: 404, never 403 (ids cannot be probed).
// - "allowed" means the guard let the request through: with a JSON body the test sends an
//   invalid one, so an allowed write answers 400 and changes nothing (roles are judged
//   before the body: kit's route handler (route-handler.ts) checks scope and role first); without a body the write
//   runs for real: a DELETE spends a spare of the caller's (the Admin and the Owner each
//   have a VPC, key, member, session, service, env var, domain, secret and allowlist rule
//   to remove, and must get a 2xx), DELETEs last and the deepest paths first.
// - the database is provisioned but not waited for; no database backup exists, so
//   {backupName} is a name that is not one (an allowed DELETE of it answers 404).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type Api, type Platform } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import {
  callOperation,
  fillPath,
  handshake,
  limited,
  operationsOf,
  pathParams,
  sampleOf,
  type Answer,
  type Body,
  type OperationRef,
} from '../support/operations.ts';
import { testEdge } from '@pier/testing';
import { DATABASES_ENV, cleanupVpc } from './databases-helpers.ts';
import { cleanVpcs, TINY_HTTP } from './services-support.ts';

type Access = 'Public' | 'User' | 'Member' | 'Admin';

const WS = '/api/v1/workspaces/{workspaceID}';
const VPC = `${WS}/vpcs/{vpcID}`;
const SVC = `${VPC}/services/{serviceID}`;
const DB = `${VPC}/databases/{databaseID}`;
/** Webhooks point at a port nothing listens on, let past the URL guard for this test (deliveries fail and retry, harmlessly). */
const WEBHOOK_URL = 'http://127.0.0.1:9/hook';

/** Where the general rule (GET Member, other methods Admin, no workspace User) does not hold. */
const EXCEPTIONS: Record<string, Access> = {
  // Served by the gateway itself, without a token: the API's description.
  'GET /api/v1/openapi.json': 'Public',
  // API keys table: GET base is Admin ("A Developer cannot list keys").
  [`GET ${WS}/api-keys`]: 'Admin',
  // Databases rule 6: `schema` and `query` require Owner or Admin.
  [`GET ${DB}/schema`]: 'Admin',
  // The spec says "(see Authentication)": a shell reads every secret the container holds,
  // so Pier asks for Owner or Admin (compute's exec route).
  [`GET ${SVC}/exec`]: 'Admin',
  // The audit log and webhooks (issue 31): Owner and Admin only, reads included.
  [`GET ${WS}/events`]: 'Admin',
  [`GET ${WS}/webhooks`]: 'Admin',
  [`GET ${WS}/webhooks/{webhookID}`]: 'Admin',
  [`GET ${WS}/webhooks/{webhookID}/deliveries`]: 'Admin',
};

function accessOf(method: string, path: string): Access {
  const exception = EXCEPTIONS[`${method} ${path}`];
  if (exception) return exception;
  if (!path.includes('{workspaceID}')) return 'User';
  return method === 'GET' ? 'Member' : 'Admin';
}

/**
 * The contract's endpoint tables, row by row: each must be in the document, and the rule
 * above must give it the role its table does (so the rule is the spec's, not the code's).
 */
const SPEC_TABLE: [string, string, 'Member' | 'Admin'][] = [
  ['GET', `${WS}/api-keys`, 'Admin'],
  ['POST', `${WS}/api-keys`, 'Admin'],
  ['DELETE', `${WS}/api-keys/{keyID}`, 'Admin'],
  ['GET', `${VPC}/services`, 'Member'],
  ['POST', `${VPC}/services`, 'Admin'],
  ['GET', SVC, 'Member'],
  ['PATCH', SVC, 'Admin'],
  ['DELETE', SVC, 'Admin'],
  ['POST', `${SVC}/deploy`, 'Admin'],
  ['POST', `${SVC}/restart`, 'Admin'],
  ['POST', `${SVC}/rollback`, 'Admin'],
  ['GET', `${SVC}/deployments`, 'Member'],
  ['GET', `${SVC}/logs`, 'Member'],
  ['GET', `${SVC}/logs/history`, 'Member'],
  ['GET', `${SVC}/env`, 'Member'],
  ['PUT', `${SVC}/env`, 'Admin'],
  ['DELETE', `${SVC}/env/{envVarID}`, 'Admin'],
  ['GET', `${SVC}/domains`, 'Member'],
  ['POST', `${SVC}/domains`, 'Admin'],
  ['POST', `${SVC}/domains/{domainID}/verify`, 'Admin'],
  ['DELETE', `${SVC}/domains/{domainID}`, 'Admin'],
  ['GET', `${SVC}/uptime`, 'Member'],
  ['POST', `${SVC}/uptime`, 'Admin'],
  ['DELETE', `${SVC}/uptime`, 'Admin'],
  ['GET', `${SVC}/builds`, 'Member'],
  ['POST', `${SVC}/builds/git`, 'Admin'],
  ['POST', `${SVC}/builds/source-upload`, 'Admin'],
  ['GET', `${SVC}/builds/{buildID}`, 'Member'],
  ['GET', `${SVC}/builds/{buildID}/logs`, 'Member'],
  ['POST', `${SVC}/builds/{buildID}/cancel`, 'Admin'],
  ['GET', `${SVC}/backups`, 'Member'],
  ['POST', `${SVC}/backups`, 'Admin'],
  ['POST', `${SVC}/backups/restore`, 'Admin'],
  ['PUT', `${SVC}/backups/schedule`, 'Admin'],
  ['DELETE', `${SVC}/backups/schedule`, 'Admin'],
  ['GET', `${VPC}/databases`, 'Member'],
  ['POST', `${VPC}/databases`, 'Admin'],
  ['GET', DB, 'Member'],
  ['PATCH', DB, 'Admin'],
  ['DELETE', DB, 'Admin'],
  ['GET', `${DB}/connection`, 'Member'],
  ['GET', `${DB}/backups`, 'Member'],
  ['POST', `${DB}/backups`, 'Admin'],
  ['POST', `${DB}/backups/restore`, 'Admin'],
  ['PATCH', `${DB}/backups/schedule`, 'Admin'],
  ['DELETE', `${DB}/backups/{backupName}`, 'Admin'],
  ['POST', `${DB}/fork`, 'Admin'],
  ['PATCH', `${DB}/replicas`, 'Admin'],
  ['GET', `${DB}/schema`, 'Admin'],
  ['POST', `${DB}/query`, 'Admin'],
  ['GET', `${DB}/slow-queries`, 'Member'],
  ['POST', `${DB}/slow-queries/reset`, 'Admin'],
  ['GET', `${DB}/ip-allowlist`, 'Member'],
  ['POST', `${DB}/ip-allowlist`, 'Admin'],
  ['DELETE', `${DB}/ip-allowlist/{ruleID}`, 'Admin'],
  ['GET', `${VPC}/secrets`, 'Member'],
  ['POST', `${VPC}/secrets`, 'Admin'],
  ['GET', `${VPC}/secrets/{secretID}`, 'Member'],
  ['DELETE', `${VPC}/secrets/{secretID}`, 'Admin'],
];

/** What `x-pier-role` says for each access (the document should tell the same story). */
const DOCUMENTED_ROLE: Record<Exclude<Access, 'Public'>, string> = { User: 'any authenticated user', Member: 'Member', Admin: 'Admin' };

/** Bodies that pass validation, for the callers whose role lets them through and whose ids must 404 in the handler. */
const VALID_BODIES: Record<string, unknown> = {
  [`POST ${WS}/members`]: { email: 'nobody@example.com', role: 'viewer' },
  [`PATCH ${WS}/members/{userID}`]: { role: 'viewer' },
  [`PATCH ${SVC}`]: { min_replicas: 1 },
  [`POST ${SVC}/deploy`]: { image_tag: '1' },
  [`POST ${SVC}/rollback`]: { deployment_id: randomUUID() },
  [`PUT ${SVC}/env`]: { variables: [] },
  [`POST ${SVC}/domains`]: { hostname: 'www.example.com' },
  [`POST ${SVC}/builds/git`]: { repo_url: 'https://example.com/app.git' },
  [`POST ${SVC}/backups/restore`]: { backup_id: 'nothing' },
  [`PATCH ${DB}`]: { external_access_enabled: false },
  [`POST ${DB}/backups/restore`]: { name: 'restored' },
  [`PATCH ${DB}/backups/schedule`]: { enabled: false },
  [`POST ${DB}/fork`]: { name: 'forked' },
  [`PATCH ${DB}/replicas`]: { replicas: 1 },
  [`POST ${DB}/query`]: { sql: 'select 1' },
  [`POST ${DB}/ip-allowlist`]: { cidr: '10.1.0.0/16' },
  [`POST ${WS}/webhooks`]: { url: WEBHOOK_URL, events: ['*'] },
  [`PATCH ${WS}/webhooks/{webhookID}`]: { description: 'changed' },
};

/** Not an object: every JSON body schema refuses it, after the role check. */
const INVALID_BODY: Body = { kind: 'json', value: 'not an object' };

const INVALID_KEY = { error: 'invalid or expired API key', code: 'invalid_api_key' };
const FORBIDDEN = 'insufficient workspace permissions';
const WORKSPACE_NOT_FOUND = { error: 'workspace not found', code: 'workspace_not_found' };

type Who =
  | 'no token'
  | 'malformed key'
  | 'malformed JWT'
  | 'unknown session token'
  | 'revoked key'
  | 'expired key'
  | 'viewer'
  | 'developer'
  | 'admin'
  | 'owner'
  | 'outsider';

/** Tokens that name nobody, one of each shape (the shape decides how auth looks it up), and their 401 codes. */
const REFUSED: [Who, string][] = [
  ['malformed key', 'invalid_api_key'],
  ['malformed JWT', 'invalid_token'],
  ['unknown session token', 'invalid_session'],
  ['revoked key', 'invalid_api_key'],
  ['expired key', 'invalid_api_key'],
];

/** What a call must answer. */
type Expected =
  | { kind: 'public' }
  | { kind: 'unauthenticated'; code: string }
  | { kind: 'forbidden' }
  | { kind: 'not found'; exact?: Record<string, string> }
  | { kind: 'allowed'; invalidBody: boolean; spends: boolean };

interface Call {
  op: OperationRef;
  caller: string;
  token: string | undefined;
  /** The path parameters' values. */
  ids: Record<string, string>;
  body: Body;
  expected: Expected;
}

interface Outcome {
  call: Call;
  path: string;
  answer: Answer;
  problem?: string;
}

let p: Platform;
let oidc: OidcProvider;
let owner: Api;
let doc: { paths: Record<string, Record<string, any>> };
let ops: OperationRef[];
const tokens = {} as Record<Who, string | undefined>;
/** Our ids by path parameter; a DELETE by the Admin or the Owner spends one of `spare`'s instead. */
const ours: Record<string, string> = {};
const spare: Record<'admin' | 'owner', Record<string, string>> = { admin: {}, owner: {} };
/** The outsider's own workspace and VPC. */
const theirs: Record<string, string> = {};
/** Env var ids by key (see pathOf). */
const envKeys = new Map<string, string>();
let workDir: string;
/** Custom domains and uptime need the edge (a proxy container of this test's own). */
const edge = testEdge('apps.authz.test');

async function sql(text: string, values: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: p.database.adminUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

async function created(res: Promise<{ status: number; body: any }>, what: string, status = 201): Promise<any> {
  const r = await res;
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

beforeAll(async () => {
  oidc = await startOidcProvider();
  p = await startPlatform({
    env: {
      auth: oidc.env,
      compute: edge.env,
      databases: DATABASES_ENV,
      events: { PIER_EVENTS_WEBHOOK_ALLOW_HTTP: 'true', PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
    },
  });
  owner = p.api(p.bootstrap.token);
  const ws = p.bootstrap.workspaceId;
  const vpc = p.bootstrap.vpcId;
  const vpcBase = `/api/v1/workspaces/${ws}/vpcs/${vpc}`;
  Object.assign(ours, { workspaceID: ws, vpcID: vpc });

  tokens['no token'] = undefined;
  tokens['malformed key'] = 'sk-not-a-key';
  tokens['malformed JWT'] = 'not.a.jwt';
  tokens['unknown session token'] = 'ab'.repeat(32);
  tokens.owner = p.bootstrap.token;
  for (const role of ['admin', 'developer', 'viewer'] as const) tokens[role] = await memberKey(p, oidc, `${role}@example.com`, role);

  // Keys of the Owner's, so that only their state can refuse them.
  const revoked = await created(owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'revoked' }), 'revoked key');
  expect((await owner.delete(`/api/v1/workspaces/${ws}/api-keys/${revoked.id}`)).status).toBe(204);
  tokens['revoked key'] = revoked.key;
  const expired = await created(owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'expired', expires_in_days: 1 }), 'expiring key');
  expect(await sql(`update auth.api_keys set expires_at = now() - interval '1 second' where id = $1`, [expired.id])).toBe(1);
  tokens['expired key'] = expired.key;

  // Someone with a workspace of their own, and nothing in ours.
  const outsider = p.api(await oidc.sign('outsider@example.com'));
  const home = await created(outsider.post('/api/v1/workspaces', { name: 'elsewhere' }), 'outsider workspace');
  Object.assign(theirs, { workspaceID: home.id, vpcID: home.default_vpc_id });
  tokens.outsider = (await created(outsider.post(`/api/v1/workspaces/${home.id}/api-keys`, { name: 'laptop' }), 'outsider key')).key;

  // Real ids for every path parameter; the Admin and the Owner each spend ids of their own.
  const spend = ['admin', 'owner'] as const;
  ours.keyID = (await created(owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: 'listed' }), 'key')).id;
  ours.sessionID = (await created(owner.post('/api/v1/cli-sessions', { name: 'authz' }), 'session')).id;
  for (const who of spend) {
    spare[who].keyID = (await created(owner.post(`/api/v1/workspaces/${ws}/api-keys`, { name: `spare-${who}` }), 'spare key')).id;
    spare[who].sessionID = (await created(owner.post('/api/v1/cli-sessions', { name: `spare-${who}` }), 'spare session')).id;
    spare[who].vpcID = (await created(owner.post(`/api/v1/workspaces/${ws}/vpcs`, { name: `spare-${who}` }), 'spare VPC')).id;
  }
  for (const [email, into] of [
    ['member@example.com', ours],
    ['spare-admin@example.com', spare.admin],
    ['spare-owner@example.com', spare.owner],
  ] as const) {
    expect((await p.api(await oidc.sign(email)).get('/api/v1/me')).status).toBe(200);
    into.userID = (await created(owner.post(`/api/v1/workspaces/${ws}/members`, { email, role: 'viewer' }), email)).user_id;
  }

  ours.serviceID = (await created(owner.post(`${vpcBase}/services`, { name: 'authz', port: 8080 }), 'service')).id;
  const svc = `${vpcBase}/services/${ours.serviceID}`;
  const variables = ['GREETING', 'SPARE_ADMIN', 'SPARE_OWNER'].map((k) => ({ key: k, value: 'hello' }));
  const env = (await created(owner.put(`${svc}/env`, { variables }), 'env', 200)).variables as { id: string; key: string }[];
  for (const v of env) envKeys.set(v.id, v.key);
  const envId = (k: string) => env.find((v) => v.key === k)!.id;
  ours.envVarID = envId('GREETING');
  ours.domainID = (await created(owner.post(`${svc}/domains`, { hostname: 'authz.example.com' }), 'domain')).id;
  ours.secretID = (await created(owner.post(`${vpcBase}/secrets`, { name: 'authz', values: { a: 'b' } }), 'secret')).id;
  // A database is provisioned (its containers start in the background); the calls do not
  // wait for it to run: its id is real from the start.
  ours.databaseID = (await created(owner.post(`${vpcBase}/databases`, { name: 'authz' }), 'database', 202)).id;
  const rules = `${vpcBase}/databases/${ours.databaseID}/ip-allowlist`;
  ours.ruleID = (await created(owner.post(rules, { cidr: '10.0.0.0/8' }), 'allowlist rule')).id;
  // No backup is taken (that needs a running server): a name that is not one.
  ours.backupName = 'no-such-backup';
  for (const [i, who] of spend.entries()) {
    spare[who].serviceID = (await created(owner.post(`${vpcBase}/services`, { name: `spare-${who}` }), 'spare service')).id;
    spare[who].envVarID = envId(`SPARE_${who.toUpperCase()}`);
    spare[who].domainID = (await created(owner.post(`${svc}/domains`, { hostname: `spare-${who}.example.com` }), 'spare domain')).id;
    spare[who].secretID = (await created(owner.post(`${vpcBase}/secrets`, { name: `spare-${who}`, values: { a: 'b' } }), 'spare secret')).id;
    spare[who].ruleID = (await created(owner.post(rules, { cidr: `10.${i + 1}.0.0/16` }), 'spare rule')).id;
  }

  // A webhook with one delivery (its test event); the Admin and the Owner each delete one of theirs.
  const hooks = `/api/v1/workspaces/${ws}/webhooks`;
  ours.webhookID = (await created(owner.post(hooks, { url: WEBHOOK_URL, events: ['*'] }), 'webhook')).id;
  ours.deliveryID = (await created(owner.post(`${hooks}/${ours.webhookID}/test`), 'test delivery', 202)).id;
  for (const who of spend) spare[who].webhookID = (await created(owner.post(hooks, { url: WEBHOOK_URL, events: ['*'] }), 'spare webhook')).id;

  // A build of a one-line Dockerfile, not deployed.
  workDir = await mkdtemp(path.join(tmpdir(), 'pier-authz-'));
  await writeFile(path.join(workDir, 'Dockerfile'), `FROM ${TINY_HTTP}\n`);
  const { tarDirectory } = await import('../../packages/cli/src/commands/builds.ts');
  const upload = await fetch(`${p.gatewayUrl}${svc}/builds/source-upload?deploy=false`, {
    method: 'POST',
    headers: { authorization: `Bearer ${p.bootstrap.token}`, 'content-type': 'application/gzip' },
    body: new Uint8Array(await tarDirectory(workDir)),
  });
  expect(upload.status).toBe(202);
  ours.buildID = ((await upload.json()) as { id: string }).id;

  doc = (await p.api().get('/api/v1/openapi.json')).body;
  ops = operationsOf(doc);
}, 180_000);

afterAll(async () => {
  await p?.stop();
  await oidc?.stop();
  await edge.remove();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  if (ours.vpcID) {
    await cleanVpcs(ours.vpcID);
    await cleanupVpc(ours.vpcID);
  }
});

const key = (o: OperationRef) => `${o.method} ${o.path}`;

/** The body a write is sent with: invalid for callers who must be stopped or who may pass; valid for ids that must 404. */
function bodyFor(o: OperationRef, valid: boolean): Body {
  if (o.method === 'GET' || o.method === 'DELETE' || !o.op.requestBody) return { kind: 'none' };
  const content = o.op.requestBody.content ?? {};
  const json = content['application/json'];
  if (!json) {
    // A raw body (an archive): the wrong content type is a 400 once the role passed.
    return valid ? { kind: 'raw', contentType: Object.keys(content)[0]!, data: new Uint8Array([31, 139, 8, 0]) } : { kind: 'json', value: {} };
  }
  if (!valid) return INVALID_BODY;
  return { kind: 'json', value: VALID_BODIES[key(o)] ?? sampleOf(json.schema) };
}

/** The resource a DELETE removes (its path ends with it), when the Admin and the Owner have one each to spend. */
function spent(o: OperationRef): string | undefined {
  const last = /\{(\w+)\}$/.exec(o.path)?.[1];
  return o.method === 'DELETE' && last && spare.admin[last] ? last : undefined;
}

/** Our ids as `who` uses them: a DELETE spends a spare of the caller's (the others aim at the Owner's). */
function idsFor(o: OperationRef, who: Who): Record<string, string> {
  const param = spent(o);
  if (!param) return ours;
  return { ...ours, [param]: spare[who === 'admin' ? 'admin' : 'owner'][param]! };
}

/** Every call of one operation, in the order they are made: the ones that may change something last. */
function callsOf(o: OperationRef): Call[] {
  const access = accessOf(o.method, o.path);
  const params = pathParams(o.path);
  const jsonWrite = o.method !== 'GET' && !!o.op.requestBody;
  // A DELETE of a spare must really remove it: 2xx, not a 404 or 409 that says nothing.
  const letThrough: Expected = { kind: 'allowed', invalidBody: jsonWrite, spends: !!spent(o) };
  const calls: Call[] = [];
  const add = (caller: string, who: Who, expected: Expected, ids: Record<string, string> = idsFor(o, who), validBody = false) =>
    calls.push({ op: o, caller, token: tokens[who], ids, body: bodyFor(o, validBody), expected });

  if (access === 'Public') {
    for (const who of Object.keys(tokens) as Who[]) add(who, who, { kind: 'public' });
    return calls;
  }
  add('no token', 'no token', { kind: 'unauthenticated', code: 'missing_token' });
  for (const [who, code] of REFUSED) add(who, who, { kind: 'unauthenticated', code });

  if (access === 'User') {
    // The caller's own things: an id of the Owner's is not found for anyone else.
    const mine = params.length === 0;
    for (const who of ['viewer', 'developer', 'admin', 'outsider'] as const) {
      add(who, who, mine ? letThrough : { kind: 'not found' }, idsFor(o, 'owner'), !mine);
    }
    add('owner', 'owner', letThrough);
    return calls;
  }

  const stopped: Expected = access === 'Admin' ? { kind: 'forbidden' } : letThrough;
  add('viewer', 'viewer', stopped);
  add('developer', 'developer', stopped);
  // Another workspace's member, on our path with our ids...
  const target = idsFor(o, 'owner');
  add('outsider: our workspace', 'outsider', { kind: 'not found', exact: WORKSPACE_NOT_FOUND }, target, true);
  // ...and on their own workspace's path (and VPC's) with our ids below it.
  if (params.length > 1) add('outsider: own workspace, our ids', 'outsider', { kind: 'not found' }, { ...target, workspaceID: theirs.workspaceID! }, true);
  if (params.includes('vpcID') && params.length > 2) {
    add('outsider: own VPC, our ids', 'outsider', { kind: 'not found' }, { ...target, workspaceID: theirs.workspaceID!, vpcID: theirs.vpcID! }, true);
  }
  add('admin', 'admin', letThrough);
  add('owner', 'owner', letThrough);
  return calls;
}

/** What is wrong with an answer, or undefined. */
function problemOf(expected: Expected, a: Answer): string | undefined {
  const got = `${a.status} ${JSON.stringify(a.body)?.slice(0, 200)}`;
  switch (expected.kind) {
    case 'public':
      return a.status === 200 ? undefined : `want 200, got ${got}`;
    case 'unauthenticated':
      if (a.status !== 401) return `want 401, got ${got}`;
      if (typeof a.body?.error !== 'string' || a.body?.code !== expected.code) return `want 401 code ${expected.code}, got ${got}`;
      if (expected.code === 'invalid_api_key' && JSON.stringify(a.body) !== JSON.stringify(INVALID_KEY))
        return `want ${JSON.stringify(INVALID_KEY)}, got ${got}`;
      return undefined;
    case 'forbidden':
      if (a.status !== 403 || a.body?.error !== FORBIDDEN) return `want 403 ${FORBIDDEN}, got ${got}`;
      return undefined;
    case 'not found':
      if (a.status !== 404 || typeof a.body?.code !== 'string') return `want 404, got ${got}`;
      if (expected.exact && JSON.stringify(a.body) !== JSON.stringify(expected.exact)) return `want 404 ${JSON.stringify(expected.exact)}, got ${got}`;
      return undefined;
    case 'allowed':
      if (a.status === 401 || a.status === 403) return `want it let through, got ${got}`;
      if (a.status >= 500) return `want it let through and answered, got ${got}`;
      if (a.status === 404 && ['workspace_not_found', 'vpc_not_found', 'route_not_found'].includes(a.body?.code)) return `want it let through, got ${got}`;
      if (expected.invalidBody && a.status !== 400) return `want 400 for the invalid body (the guard let it through), got ${got}`;
      if (expected.spends && (a.status < 200 || a.status > 299)) return `want the spare removed (2xx), got ${got}`;
      return undefined;
  }
}

/**
 * The call's path. An env var's id is re-issued whenever the service's list changes
 * (compute writes the list anew), so one is looked up by its key just before the call.
 */
async function pathOf(call: Call): Promise<string> {
  const envKey = envKeys.get(call.ids.envVarID ?? '');
  if (!envKey) return fillPath(call.op.path, call.ids);
  const env = await owner.get(fillPath(`${SVC}/env`, ours));
  const now = (env.body.variables as { id: string; key: string }[]).find((v) => v.key === envKey);
  return fillPath(call.op.path, { ...call.ids, envVarID: now?.id ?? call.ids.envVarID! });
}

async function run(call: Call): Promise<Outcome> {
  const path = await pathOf(call);
  const answer = call.op.op['x-pier-websocket']
    ? await handshake(p.gatewayUrl, path, call.token)
    : await callOperation(p.gatewayUrl, call.op.method, path, call.token, call.body);
  return { call, path, answer, problem: problemOf(call.expected, answer) };
}

const outcomes: Outcome[] = [];

describe('every operation of the OpenAPI document', () => {
  it('the contract’s endpoint tables are all in the document, with the roles the general rule gives them', () => {
    const present = new Set(ops.map(key));
    const missing = SPEC_TABLE.filter(([m, path]) => !present.has(`${m} ${path}`)).map(([m, path]) => `${m} ${path}`);
    expect(missing).toEqual([]);
    const disagree = SPEC_TABLE.filter(([m, path, role]) => accessOf(m, path) !== role).map(([m, path, role]) => `${m} ${path}: ${role}`);
    expect(disagree).toEqual([]);
    expect(ops.length).toBeGreaterThanOrEqual(SPEC_TABLE.length);
  });

  it('documents for each operation the role the contract asks (x-pier-role)', () => {
    const wrong = ops
      .filter((o) => accessOf(o.method, o.path) !== 'Public')
      .filter((o) => o.op['x-pier-role'] !== DOCUMENTED_ROLE[accessOf(o.method, o.path) as Exclude<Access, 'Public'>])
      .map((o) => `${key(o)}: documents ${o.op['x-pier-role']}, the contract says ${accessOf(o.method, o.path)}`);
    expect(wrong).toEqual([]);
  });

  it('documents the refusals each operation can answer: 401, 403 where a role is needed, 404 under a workspace', () => {
    const missing: string[] = [];
    for (const o of ops) {
      const access = accessOf(o.method, o.path);
      if (access === 'Public') continue;
      const documented = Object.keys(o.op.responses ?? {});
      const want = ['401', ...(access === 'Admin' ? ['403'] : []), ...(o.path.includes('{workspaceID}') ? ['404'] : [])];
      for (const status of want) if (!documented.includes(status)) missing.push(`${key(o)}: ${status}`);
    }
    expect(missing).toEqual([]);
  });

  it('answers every caller as the role rules say (401, 403, 404 for others, let through)', async () => {
    const started = Date.now();
    // Deletes last, the deepest paths first, one at a time; everything else 8 operations at a time.
    const writesThatRemove = ops.filter((o) => o.method === 'DELETE').sort((a, b) => b.path.split('/').length - a.path.split('/').length);
    const rest = ops.filter((o) => o.method !== 'DELETE');
    const runOp = (o: OperationRef) => async () => {
      const out: Outcome[] = [];
      for (const call of callsOf(o)) out.push(await run(call));
      return out;
    };
    outcomes.push(...(await limited(8, rest.map(runOp))).flat());
    for (const o of writesThatRemove) outcomes.push(...(await runOp(o)()));

    const problems = outcomes.filter((x) => x.problem).map((x) => `${key(x.call.op)} as ${x.call.caller} (${x.path}): ${x.problem}`);
    const callers = new Set(outcomes.map((x) => x.call.caller));
    console.log(`authorization: ${ops.length} operations, ${outcomes.length} calls (${callers.size} kinds of caller) in ${Date.now() - started} ms`);
    if (process.env.PIER_AUTHZ_REPORT) {
      for (const o of ops) {
        const mine = outcomes.filter((x) => x.call.op === o);
        console.log(`${key(o).padEnd(100)} ${accessOf(o.method, o.path).padEnd(7)} ${mine.map((x) => `${x.call.caller}=${x.answer.status}`).join(' ')}`);
      }
    }
    expect(problems, problems.join('\n')).toEqual([]);
    // Every operation was called by every kind of caller that applies to it.
    for (const o of ops) expect(outcomes.filter((x) => x.call.op === o).length, key(o)).toBeGreaterThanOrEqual(11);
  }, 240_000);
});
