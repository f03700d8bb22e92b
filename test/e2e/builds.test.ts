// Builds end to end: through the gateway with an API key, and with the built `pier` CLI, on
// the docker cluster, from a real git server (pier/git-http, allowlisted for this platform
// only) and from a directory the CLI packs itself. The log is followed as server-sent events
// through the gateway; the built image is deployed and serves what only its source holds.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, startGitServer, type GitServer } from '@pier/testing';
import type { Api } from '../support/platform.ts';
import { startOidcProvider, type OidcProvider } from '../support/oidc.ts';
import { memberKey } from '../support/members.ts';
import { startCli, type CliHarness } from './cli-support.ts';
import { cleanVpcs, waitForStatus } from './services-support.ts';

let git: GitServer;
let oidc: OidcProvider;
let cli: CliHarness;
let owner: Api;
let base: string;
let work: string;
const marker = `through-the-gateway-${randomUUID()}`;

/** What the service's running container serves at `/` (from its VPC address). */
async function served(serviceId: string): Promise<string> {
  const containers = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${serviceId}`], status: ['running'] }) });
  const ip = Object.values(containers[0]!.NetworkSettings.Networks)[0]!.IPAddress;
  return (await fetch(`http://${ip}:8080/`)).text();
}

beforeAll(async () => {
  git = await startGitServer();
  await git.createRepo('web');
  await git.commit('web', { Dockerfile: 'FROM pier/tiny-http:1\nCOPY index.html /www/index.html\n', 'index.html': `<p>${marker}</p>\n` }, 'first');
  oidc = await startOidcProvider();
  work = await mkdtemp(path.join(tmpdir(), 'pier-e2e-builds-'));
  cli = await startCli({
    env: {
      auth: oidc.env,
      compute: {
        PIER_BUILD_ALLOWED_HOSTS: git.ip,
        PIER_BUILD_ALLOW_HTTP: 'true',
        PIER_BUILD_WORK_DIR: path.join(work, 'builds'),
        PIER_BUILD_INTERVAL_MS: '300',
      },
    },
  });
  const p = cli.platform;
  owner = p.api(p.bootstrap.token);
  base = `/api/v1/workspaces/${p.bootstrap.workspaceId}/vpcs/${p.bootstrap.vpcId}/services`;
  expect((await cli.login()).code).toBe(0);
}, 120_000);

afterAll(async () => {
  const vpc = cli?.platform.bootstrap.vpcId;
  await cli?.stop();
  if (vpc) await cleanVpcs(vpc);
  for (const image of await docker.listImages({ filters: JSON.stringify({ label: ['pier.kind=build'] }) })) {
    if (image.Labels?.['pier.workspace'] === cli?.platform.bootstrap.workspaceId)
      await docker
        .getImage(image.Id)
        .remove({ force: true })
        .catch(() => undefined);
  }
  await oidc?.stop();
  await git?.stop();
  await rm(work, { recursive: true, force: true });
}, 120_000);

describe('a git build through the gateway', () => {
  it('builds, streams its log as server-sent events to the end, deploys, and the service serves the repository', async () => {
    const svc = (await owner.post(base, { name: 'built', port: 8080, health_check_path: '/healthz' })).body;
    const queued = await owner.post(`${base}/${svc.id}/builds/git`, { repo_url: git.url('web') });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ status: 'queued', repo_url: git.url('web') });

    const res = await fetch(`${cli.platform.gatewayUrl}${base}/${svc.id}/builds/${queued.body.id}/logs?follow=true`, {
      headers: { authorization: `Bearer ${cli.platform.bootstrap.token}`, accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await res.text())
      .split('\n\n')
      .filter((block) => block.startsWith('event:'))
      .map((block) => ({ event: /^event: (\w+)/.exec(block)![1], data: JSON.parse(block.slice(block.indexOf('data: ') + 6)) }));
    const log = events
      .filter((e) => e.event === 'log')
      .map((e) => e.data.text)
      .join('');
    expect(log).toMatch(/Step 1\/\d+ : FROM pier\/tiny-http:1/);
    expect(log).toMatch(/Successfully tagged pier-build\//);
    const last = events[events.length - 1]!;
    expect(last).toMatchObject({ event: 'status', data: { id: queued.body.id, status: 'succeeded' } });
    expect(last.data.deployment_id).toEqual(expect.any(String));

    const running = await waitForStatus(owner, `${base}/${svc.id}`, 'running', 60_000);
    expect(running.current_deployment_id).toBe(last.data.deployment_id);
    expect(await served(svc.id)).toContain(marker);
    expect((await owner.get(`${base}/${svc.id}/builds`)).body.items[0]).toMatchObject({ id: queued.body.id, status: 'succeeded' });
  });

  it('takes an archive as the raw request body through the gateway, and refuses a Developer', async () => {
    const svc = (await owner.post(base, { name: 'uploaded', port: 8080 })).body;
    const dir = path.join(work, 'src');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'Dockerfile'), 'FROM pier/tiny-http:1\nCOPY index.html /www/index.html\n');
    await writeFile(path.join(dir, 'index.html'), 'uploaded through the gateway\n');
    const { tarDirectory } = await import('../../packages/cli/src/commands/builds.ts');
    const body = await tarDirectory(dir);
    const up = await fetch(`${cli.platform.gatewayUrl}${base}/${svc.id}/builds/source-upload?deploy=false`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cli.platform.bootstrap.token}`, 'content-type': 'application/gzip' },
      body: new Uint8Array(body),
    });
    expect(up.status).toBe(202);
    expect(await up.json()).toMatchObject({ source: 'upload', status: 'queued', deploy: false });

    const asDeveloper = cli.platform.api(await memberKey(cli.platform, oidc, 'developer-builds@example.com', 'developer'));
    expect((await asDeveloper.post(`${base}/${svc.id}/builds/git`, { repo_url: git.url('web') })).status).toBe(403);
    expect((await asDeveloper.get(`${base}/${svc.id}/builds`)).status).toBe(200);
  });
});

describe('pier services build', () => {
  it('builds from git with --wait (printing the log), lists, shows and prints the log of the build', async () => {
    expect((await cli.pier(['services', 'create', 'cli-built', '--port', '8080', '--health-check-path', '/healthz'])).code).toBe(0);
    const built = await cli.pier(['services', 'build', 'cli-built', '--git', git.url('web'), '--wait']);
    expect(built.code, built.stderr).toBe(0);
    expect(built.stdout).toMatch(/Step 1\/\d+ : FROM pier\/tiny-http:1/);
    expect(built.stdout).toMatch(/Built pier-build\/[0-9a-f-]+:[0-9a-f-]+, deployed as [0-9a-f-]+/);

    const [b] = await cli.json(['services', 'builds', 'list', 'cli-built']);
    expect(b).toMatchObject({ status: 'succeeded', source: 'git' });
    const shown = await cli.pier(['services', 'builds', 'show', 'cli-built', b.id]);
    expect(shown.stdout).toMatch(/status\s+succeeded/);
    const log = await cli.pier(['services', 'builds', 'logs', 'cli-built', b.id]);
    expect(log.stdout).toContain('Successfully tagged');
    const followed = await cli.pier(['services', 'builds', 'logs', 'cli-built', b.id, '--follow']);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toContain('Successfully tagged');
  });

  it('packs a directory with --upload, and a failed build exits 1 with the reason', async () => {
    const dir = path.join(work, 'cli-src');
    await mkdir(path.join(dir, '.git'), { recursive: true });
    await writeFile(path.join(dir, '.git', 'secret'), 'never sent\n');
    await writeFile(path.join(dir, 'Dockerfile'), 'FROM pier/tiny-http:1\nCOPY . /www/\n');
    await writeFile(path.join(dir, 'index.html'), 'packed by the CLI\n');
    const up = await cli.pier(['--json', 'services', 'build', 'cli-built', '--upload', dir, '--no-deploy', '--wait']);
    expect(up.code, up.stderr).toBe(0);
    // The image has the directory's files, and not its repository metadata.
    const container = await docker.createContainer({ Image: JSON.parse(up.stdout).image, Labels: { 'pier.test': 'true' } });
    try {
      expect(await container.getArchive({ path: '/www/index.html' })).toBeDefined();
      await expect(container.getArchive({ path: '/www/.git' })).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await container.remove({ force: true });
    }

    await writeFile(path.join(dir, 'Dockerfile'), 'FROM pier/tiny-http:1\nRUN false\n');
    const failed = await cli.pier(['services', 'build', 'cli-built', '--upload', dir, '--wait']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/pier: build [0-9a-f-]+ failed: .*returned a non-zero code/);

    const usage = await cli.pier(['services', 'build', 'cli-built']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/exactly one of --git <url> and --upload/);
  });

  it('cancels a build', async () => {
    await git.commit('web', { Dockerfile: `FROM pier/debian-base:bookworm\nRUN sleep 600 # ${randomUUID()}\n` }, 'slow');
    const queued = await cli.json(['services', 'build', 'cli-built', '--git', git.url('web'), '--no-deploy']);
    const cancelled = await cli.json(['services', 'builds', 'cancel', 'cli-built', queued.id]);
    expect(cancelled).toMatchObject({ id: queued.id, status: 'cancelled' });
    const again = await cli.pier(['services', 'builds', 'cancel', 'cli-built', queued.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/build_finished/);
  });
});
