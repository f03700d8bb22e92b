/**
 * `pnpm fuzz`: schemathesis (an OpenAPI fuzzer from PyPI, pinned in ./requirements.txt and
 * installed by ./install-schemathesis.sh into a venv outside the checkout) against a real
 * platform — all services in this process, PostgreSQL and NATS from Testcontainers with the
 * locally built images, as the vitest suite runs them — for a bounded time. Every
 * operation of the gateway's /api/v1/openapi.json is called with the bootstrap owner's
 * token and with path parameters naming real resources made here first, so requests reach
 * the handlers instead of stopping at a 404. It fails on any 5xx (`not_a_server_error`), a
 * status the document does not list (`status_code_conformance`) or a body that does not
 * match the documented schema (`response_schema_conformance`, `content_type_conformance`).
 *
 * Left out on purpose (see EXCLUDED and the per-operation settings below):
 *   - POST .../vpcs/{vpcID}/databases: provisioning starts a database container per call
 *     (tens of seconds each on two cores); the database paths are fuzzed against an id that
 *     does not exist, so they answer their documented 404 (and 400 for bad input).
 *   - `follow=true` on GET .../logs and GET .../events: event streams that only end when the client leaves.
 *   - DELETE of a service, VPC, secret or domain gets a throwaway one, so the fixtures stay;
 *     the API key, member and CLI session the other deletes name are made for them alone.
 * The edge runs (custom domains and uptime need it); ./hooks.py lets schemathesis send the
 * source upload's tarballs and tells it the Idempotency-Key's pattern.
 *
 * Env: PIER_FUZZ_SECONDS (schemathesis' time budget, default 150), PIER_FUZZ_EXAMPLES (test
 * cases per operation and phase, default 25), PIER_FUZZ_WORKERS (default 1: hypothesis is
 * not thread-safe everywhere, and two cores gain little), PIER_FUZZ_SEED,
 * PIER_FUZZ_LOG_LEVEL (the services' log level, default error: a 5xx's stack trace shows),
 * PIER_TEST_POSTGRES_URL / PIER_TEST_NATS_URL (reuse running servers), PIER_FUZZ_VENV.
 * Extra arguments go to `schemathesis run`: `pnpm fuzz --include-path-regex /secrets`.
 * Reports (JUnit, NDJSON) land in .pier/fuzz/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { StartedTestContainer } from 'testcontainers';
import { testEdge } from '@pier/testing';
import { PG_PASSWORD, startNatsContainer, startPostgresContainer } from '../global-setup.ts';
import { startPlatformAt, type Platform } from '../support/platform-core.ts';
import type { Api } from '../support/api.ts';
import { TINY_HTTP, cleanVpcs } from '../e2e/services-support.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const seconds = Number(process.env.PIER_FUZZ_SECONDS ?? 150);
const examples = Number(process.env.PIER_FUZZ_EXAMPLES ?? 25);
const workers = process.env.PIER_FUZZ_WORKERS ?? '1';
const reportDir = path.join(root, '.pier', 'fuzz');

/** Operations never called, as `METHOD path` (the reason is in the header comment). */
const EXCLUDED = [['POST', '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/databases']] as const;

const log = (msg: string) => console.log(`fuzz: ${msg}`);

// Ctrl-C (or ./pier's TERM) stops schemathesis, and what was started is still removed.
let fuzzer: ChildProcess | undefined;
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted = true;
    fuzzer?.kill(signal);
  });
}

/** Calls `api` and returns the body, failing loudly when the status is not `want`. */
async function must(call: Promise<{ status: number; body: any }>, want: number, what: string): Promise<any> {
  const res = await call;
  if (res.status !== want) throw new Error(`set-up: ${what} answered ${res.status}, not ${want}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The ids the fuzzer fills path parameters with: real resources, made through the API. */
async function makeFixtures(p: Platform) {
  const owner: Api = p.api(p.bootstrap.token);
  const ws = p.bootstrap.workspaceId;
  const vpc = p.bootstrap.vpcId;
  const wsBase = `/api/v1/workspaces/${ws}`;
  const services = `${wsBase}/vpcs/${vpc}/services`;

  const service = await must(owner.post(services, { name: 'fuzz-web', image: TINY_HTTP }), 201, 'create service');
  const svc = `${services}/${service.id}`;
  const doomedService = await must(owner.post(services, { name: 'fuzz-doomed' }), 201, 'create service to delete');
  const secret = await must(owner.post(`${wsBase}/vpcs/${vpc}/secrets`, { name: 'fuzz-secret', values: { K: 'v' } }), 201, 'create secret');
  const env = await must(owner.put(`${svc}/env`, { variables: [{ key: 'FUZZ', value: '1' }] }), 200, 'set env');
  const domain = await must(owner.post(`${svc}/domains`, { hostname: 'fuzz.example.com' }), 201, 'add domain');
  const doomedDomain = await must(owner.post(`${svc}/domains`, { hostname: 'doomed.fuzz.example.com' }), 201, 'add domain to remove');
  const doomedSecret = await must(owner.post(`${wsBase}/vpcs/${vpc}/secrets`, { name: 'fuzz-doomed', values: { K: 'v' } }), 201, 'create secret to delete');
  const uptime = await owner.post(`${svc}/uptime`, {});
  if (uptime.status >= 300) throw new Error(`set-up: enable uptime answered ${uptime.status}: ${JSON.stringify(uptime.body)}`);
  const key = await must(owner.post(`${wsBase}/api-keys`, { name: 'fuzz-doomed' }), 201, 'create api key');
  const member = await must(owner.post(`${wsBase}/members`, { email: 'fuzz-member@example.com', role: 'developer' }), 201, 'add member');
  const doomedVpc = await must(owner.post(`${wsBase}/vpcs`, { name: 'fuzz-doomed' }), 201, 'create vpc');
  const session = await must(owner.post('/api/v1/cli-sessions', { name: 'fuzz' }), 201, 'start cli session');

  return {
    common: {
      workspaceID: ws,
      vpcID: vpc,
      serviceID: service.id as string,
      secretID: secret.id as string,
      envVarID: env.variables[0].id as string,
      domainID: domain.id as string,
      keyID: key.id as string,
      userID: member.user_id as string,
      sessionID: session.id as string,
      // No database is provisioned (see the header): these name nothing, on purpose.
      databaseID: randomUUID(),
      backupName: 'fuzz-backup',
      ruleID: randomUUID(),
      buildID: randomUUID(),
    },
    doomed: {
      serviceID: doomedService.id as string,
      vpcID: doomedVpc.id as string,
      secretID: doomedSecret.id as string,
      domainID: doomedDomain.id as string,
    },
  };
}

type Fixtures = Awaited<ReturnType<typeof makeFixtures>>;

const toml = (v: string) => JSON.stringify(v);
const tomlTable = (o: Record<string, string>) =>
  `{ ${Object.entries(o)
    .map(([k, v]) => `${toml(k)} = ${toml(v)}`)
    .join(', ')} }`;

/** schemathesis.toml for this run: where, who, which ids, which checks. */
function config(gatewayUrl: string, token: string, f: Fixtures): string {
  const pathParams = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [`path.${k}`, v]));
  // One operation by its name (`METHOD path`): include-method and include-path together
  // would match either, not both.
  const op = (method: string, p: string, body: string) => `\n[[operations]]\ninclude-name = ${toml(`${method} ${p}`)}\n${body}\n`;
  const services = '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/services';
  return [
    `base-url = ${toml(gatewayUrl)}`,
    `headers = ${tomlTable({ Authorization: `Bearer ${token}` })}`,
    // Longer than the gateway's own upstream timeout (30 s): a slow answer becomes the
    // gateway's 504, a finding with a status, not a client-side timeout.
    `request-timeout = 40`,
    `workers = ${/^\d+$/.test(workers) ? workers : toml(workers)}`,
    `max-time = ${seconds}`,
    `continue-on-failure = true`,
    `suppress-health-check = ["all"]`,
    '',
    '[generation]',
    `max-examples = ${examples}`,
    // U+0000 is refused with a 400 by every route (kit's refuseNul); generating it only
    // costs examples.
    'allow-x00 = false',
    '',
    '[phases]',
    // Deterministic edge cases of every schema first, then random cases in the time left.
    // Stateful runs need links between operations, which the document does not declare.
    'examples.enabled = false',
    'stateful.enabled = false',
    '',
    '[checks]',
    'enabled = false',
    'not_a_server_error.enabled = true',
    'status_code_conformance.enabled = true',
    'content_type_conformance.enabled = true',
    'response_schema_conformance.enabled = true',
    '',
    '[parameters]',
    ...Object.entries(pathParams(f.common)).map(([k, v]) => `${toml(k)} = ${toml(v)}`),
    ...EXCLUDED.map(([method, p]) => op(method, p, 'enabled = false')),
    op('DELETE', `${services}/{serviceID}`, `parameters = ${tomlTable(pathParams({ serviceID: f.doomed.serviceID }))}`),
    op('DELETE', '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}', `parameters = ${tomlTable(pathParams({ vpcID: f.doomed.vpcID }))}`),
    op('DELETE', '/api/v1/workspaces/{workspaceID}/vpcs/{vpcID}/secrets/{secretID}', `parameters = ${tomlTable(pathParams({ secretID: f.doomed.secretID }))}`),
    op('DELETE', `${services}/{serviceID}/domains/{domainID}`, `parameters = ${tomlTable(pathParams({ domainID: f.doomed.domainID }))}`),
    op('GET', `${services}/{serviceID}/logs`, `parameters = ${tomlTable({ 'query.follow': 'false' })}`),
    op('GET', '/api/v1/workspaces/{workspaceID}/events', `parameters = ${tomlTable({ 'query.follow': 'false' })}`),
  ].join('\n');
}

async function schemathesisBin(): Promise<string> {
  const { stdout } = await promisify(execFile)(path.join(here, 'install-schemathesis.sh'), { encoding: 'utf8' });
  return stdout.trim();
}

/** schemathesis' own count of test cases ("12543 generated, 12543 passed"), in words of ours. */
function caseCounts(report: string): string {
  const m = /Test cases:\s*\n\s*(\d+) generated, ([^\n]+)/.exec(report);
  return m ? `${m[1]} test cases generated (${(m[2] ?? '').trim()})` : 'no test case count in its report';
}

/** What a failed run said, without the closing "=== ... ===" lines a CI would misread. */
function failureLines(report: string): string[] {
  return report
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l && !/^=+ .* =+$/.test(l) && !/^\d+ passed, \d+ failed/.test(l));
}

async function main(): Promise<number> {
  const t0 = Date.now();
  const since = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  const bin = await schemathesisBin();
  const containers: StartedTestContainer[] = [];
  let platform: Platform | undefined;
  const vpcs = new Set<string>();
  const workDir = await mkdtemp(path.join(tmpdir(), 'pier-fuzz-'));
  // Custom domains and uptime checks need the edge (a Caddy container compute configures).
  const edge = testEdge();
  try {
    const [postgresAdminUrl, natsUrl] = await Promise.all([
      process.env.PIER_TEST_POSTGRES_URL ??
        startPostgresContainer().then((c) => (containers.push(c), `postgres://postgres:${PG_PASSWORD}@${c.getHost()}:${c.getMappedPort(5432)}/postgres`)),
      process.env.PIER_TEST_NATS_URL ?? startNatsContainer().then((c) => (containers.push(c), `nats://${c.getHost()}:${c.getMappedPort(4222)}`)),
    ]);
    platform = await startPlatformAt({ postgresAdminUrl, natsUrl, logLevel: process.env.PIER_FUZZ_LOG_LEVEL ?? 'error', env: { compute: edge.env } });
    const p = platform;
    vpcs.add(p.bootstrap.vpcId);
    log(`platform at ${p.gatewayUrl} (${since()})`);
    const fixtures = await makeFixtures(p);
    vpcs.add(fixtures.doomed.vpcID);
    log(`fixtures made: ${Object.keys(fixtures.common).join(', ')} (${since()})`);

    const configFile = path.join(workDir, 'schemathesis.toml');
    await writeFile(configFile, config(p.gatewayUrl, p.bootstrap.token, fixtures));
    await mkdir(reportDir, { recursive: true });
    const args = [
      '--config-file',
      configFile,
      'run',
      `${p.gatewayUrl}/api/v1/openapi.json`,
      '--report',
      'junit,ndjson',
      '--report-dir',
      reportDir,
      ...(process.env.PIER_FUZZ_SEED ? ['--seed', process.env.PIER_FUZZ_SEED] : []),
      ...process.argv.slice(2),
    ];
    if (interrupted) return 130;
    log(`schemathesis ${args.slice(2).join(' ')}`);
    // Its report goes to a file, never to our output: it closes on a pytest-style
    // "=== N warnings in Ns ===" line that CI would read as a test run counting no test.
    const reportFile = path.join(reportDir, `schemathesis-${new Date().toISOString().replace(/[:.]/g, '')}.log`);
    const out = await open(reportFile, 'w');
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn(bin, args, {
        stdio: ['ignore', out.fd, out.fd],
        cwd: workDir,
        env: { ...process.env, SCHEMATHESIS_HOOKS: path.join(here, 'hooks.py'), NO_COLOR: '1' },
      });
      fuzzer = child;
      child.on('error', reject);
      child.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    }).finally(() => out.close());
    const report = await readFile(reportFile, 'utf8');
    if (code !== 0) for (const line of failureLines(report).slice(0, 400)) log(`  ${line}`);
    log(`schemathesis exited ${code} (${since()}): ${caseCounts(report)}; its report: ${path.relative(root, reportFile)}`);
    // The VPCs the fuzzer made hold services too: their containers go with ours.
    const listed = await p.api(p.bootstrap.token).get(`/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs?limit=200`);
    for (const v of (listed.body?.items ?? []) as { id: string }[]) vpcs.add(v.id);
    return code;
  } finally {
    await platform?.stop();
    await cleanVpcs(...vpcs).catch(() => undefined);
    await edge.remove();
    await Promise.allSettled(containers.map((c) => c.stop()));
    await rm(workDir, { recursive: true, force: true });
    log(`done (${since()})`);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
