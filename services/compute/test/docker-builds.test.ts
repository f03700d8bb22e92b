// Builds on the real Docker engine, from a real git server (pier/git-http: git over smart HTTP
// from Debian's packages, in a container) and from uploaded archives: built, deployed through
// the ordinary rollout, served over HTTP; then the new commit, the rollback, cancel, the queue
// limit, the timeout, a restart during a build, the URL guard and the archive rules.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CORPUS_DNS, REFUSED_URLS, TestDnsServer, adminQuery, startGitServer, type GitServer } from '@pier/testing';
import { startCompute, until, cleanDocker, type Compute } from './support.ts';
import {
  FINISHED,
  archive,
  buildEnv,
  containerExists,
  imageExists,
  logMatching,
  removeBuiltImages,
  served,
  site,
  sleeper,
  SLEEPING,
  upload,
  waitForBuild,
} from './build-support.ts';

let git: GitServer;
let dns: TestDnsServer;
let c: Compute;
let cleanup: () => Promise<void>;
const services: string[] = [];
const otherVpcs: string[] = [];
const marker = `built-from-git-${randomUUID()}`;
let firstCommit: string;

/** A web service of tiny-http's shape, never deployed. */
async function newService(name: string, opts: { scope?: { workspaceId: string; vpcId: string } } = {}): Promise<string> {
  const base = opts.scope ? `/api/v1/workspaces/${opts.scope.workspaceId}/vpcs/${opts.scope.vpcId}/services` : c.base;
  const res = await c.request('POST', base, { name, port: 8080, health_check_path: '/healthz' }, { scope: opts.scope });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  services.push(res.body.id);
  return res.body.id;
}

const gitBuild = (serviceId: string, body: Record<string, unknown>, role: 'owner' | 'developer' = 'owner') =>
  c.request('POST', `${c.base}/${serviceId}/builds/git`, body, { role });

beforeAll(async () => {
  git = await startGitServer();
  dns = await new TestDnsServer().start();
  for (const [name, records] of Object.entries(CORPUS_DNS)) dns.set(name, records);
  // A name only the test's DNS server knows: git can reach it only through the pinned address.
  dns.set('git.pier.test', { A: [git.ip] });
  const setup = await buildEnv(git, {
    PIER_DNS_RESOLVERS: dns.address,
    PIER_BUILD_UPLOAD_LIMIT_BYTES: String(1024 * 1024),
    PIER_BUILD_ALLOWED_HOSTS: `${git.ip},git.pier.test`,
  });
  cleanup = setup.cleanup;
  c = await startCompute(setup.env);
  await git.createRepo('site');
  firstCommit = await git.commit('site', site(marker), 'first');
  await git.createRepo('sleeper');
  await git.commit('sleeper', sleeper(), 'sleeps');
}, 120_000);

afterAll(async () => {
  await c?.stop();
  for (const v of [c?.vpcId, ...otherVpcs]) if (v) await cleanDocker(v);
  await removeBuiltImages(...services);
  await git?.stop();
  await dns?.stop();
  await cleanup?.();
}, 120_000);

describe('a build from a git repository', () => {
  let svc: string;
  let first: any;

  it('is queued, builds, deploys the image and the service serves what only that repository holds', async () => {
    svc = await newService('from-git');
    const res = await gitBuild(svc, { repo_url: git.url('site') });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: 'queued', source: 'git', repo_url: git.url('site'), ref: null, deploy: true, image: null, service_id: svc });
    first = await waitForBuild(c, svc, res.body.id);
    expect(first).toMatchObject({ status: 'succeeded', commit_sha: firstCommit, image: `pier-build/${svc}:${res.body.id}`, error: null });
    expect(first.deployment_id).toEqual(expect.any(String));
    const service = await until(
      () => c.get(`${c.base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running',
      60_000,
    );
    expect(service).toMatchObject({ image: first.image, current_deployment_id: first.deployment_id });
    expect(await served(c.vpcId, svc, first.deployment_id)).toContain(marker);

    const history = (await c.get(`${c.base}/${svc}/deployments`)).body.items;
    expect(history[0]).toMatchObject({ id: first.deployment_id, image: first.image, reason: 'deploy' });
    const log = (await c.get(`${c.base}/${svc}/builds/${first.id}/logs`)).body;
    expect(log.status).toBe('succeeded');
    expect(log.log).toMatch(/at commit [0-9a-f]{40}/);
    expect(log.log).toMatch(/Step 1\/\d+ : FROM pier\/tiny-http:1/);
    expect(log.log).toContain(`deployed ${first.image} as deployment ${first.deployment_id}`);
    // Never the daemon's clone: the engine got a tar, not the URL.
    expect(log.log).toContain(`(connecting to ${git.ip})`);
  });

  it('builds a second commit by its ref, and a rollback brings the first one back', async () => {
    const newer = `second-commit-${randomUUID()}`;
    const second = await git.commit('site', { 'index.html': `<p>${newer}</p>\n` }, 'second');
    // Another branch moves on: the commit, not the branch, is what gets built.
    await git.commit('site', { 'index.html': '<p>third</p>\n' }, 'third');
    const res = await gitBuild(svc, { repo_url: git.url('site'), ref: second });
    expect(res.status).toBe(202);
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b).toMatchObject({ status: 'succeeded', commit_sha: second, ref: second });
    await until(
      () => c.get(`${c.base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running' && s.current_deployment_id === b.deployment_id,
      60_000,
    );
    expect(await served(c.vpcId, svc, b.deployment_id)).toContain(newer);

    const back = await c.post(`${c.base}/${svc}/rollback`, { deployment_id: first.deployment_id });
    expect(back.status).toBe(202);
    expect(back.body.deployment).toMatchObject({ image: first.image, reason: 'rollback', rollback_of: first.deployment_id });
    await until(
      () => c.get(`${c.base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running' && s.current_deployment_id === back.body.deployment.id,
      60_000,
    );
    expect(await served(c.vpcId, svc, back.body.deployment.id)).toContain(marker);
  });

  it('fetches by a host name through the address the guard checked (git never resolves it itself)', async () => {
    const url = `http://git.pier.test/git/site.git`;
    const res = await gitBuild(svc, { repo_url: url, deploy: false });
    expect(res.status).toBe(202);
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b.status, b.error).toBe('succeeded');
    const log = (await c.get(`${c.base}/${svc}/builds/${b.id}/logs`)).body.log;
    expect(log).toContain(`fetching ${url} (connecting to ${git.ip})`);
    // Nothing else resolves git.pier.test: the clone went where the check said.
    expect(dns.queries.filter((q) => q.startsWith('git.pier.test')).length).toBeGreaterThan(0);
  });

  it('builds a branch, a Dockerfile elsewhere and a context directory, without deploying when told not to', async () => {
    await git.commit(
      'site',
      { 'docker/web.Dockerfile': 'FROM pier/tiny-http:1\nCOPY page.html /www/index.html\n', 'web/page.html': '<p>from a branch</p>\n' },
      'on a branch',
      'feature/x',
    );
    const res = await gitBuild(svc, {
      repo_url: git.url('site'),
      ref: 'feature/x',
      dockerfile_path: 'docker/web.Dockerfile',
      context_dir: 'web',
      deploy: false,
    });
    expect(res.status).toBe(202);
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b).toMatchObject({ status: 'succeeded', deploy: false, deployment_id: null, dockerfile_path: 'docker/web.Dockerfile', context_dir: 'web' });
    expect(await imageExists(b.image)).toBe(true);
  });

  it('fails with the reason when the ref does not exist, and leaves no image', async () => {
    const res = await gitBuild(svc, { repo_url: git.url('site'), ref: 'no-such-branch' });
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b.status).toBe('failed');
    expect(b.error).toMatch(/git clone failed: .*no-such-branch/);
    expect(await imageExists(`pier-build/${svc}:${b.id}`)).toBe(false);
    const missing = await gitBuild(svc, { repo_url: `http://${git.ip}/git/nothing-here.git` });
    expect((await waitForBuild(c, svc, missing.body.id)).error).toMatch(/no repository at .* \(HTTP 404\)/);
  });

  it('lists builds newest first, and streams a log with follow=true ending with the final status', async () => {
    const list = await c.get(`${c.base}/${svc}/builds?limit=2`);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(2);
    expect(list.body.next_cursor).toEqual(expect.any(String));
    const res = await gitBuild(svc, { repo_url: git.url('site'), deploy: false });
    const stream = await fetch(`${c.url}${c.base}/${svc}/builds/${res.body.id}/logs?follow=true`, { headers: { 'x-pier-identity': await c.token('viewer') } });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await stream.text();
    expect(text).toMatch(/event: log\ndata: \{"text":/);
    const last = text.trim().split('\n\n').pop()!;
    expect(last).toMatch(/^event: status\ndata: /);
    expect(JSON.parse(last.split('data: ')[1]!)).toMatchObject({ id: res.body.id, status: 'succeeded' });
  });
});

describe('a build from an uploaded archive', () => {
  it('builds the same way and deploys', async () => {
    const svc = await newService('from-upload');
    const uploaded = `uploaded-${randomUUID()}`;
    const body = await archive([
      { name: 'app/', type: 'directory' },
      { name: 'app/Dockerfile', content: site(uploaded).Dockerfile },
      { name: 'app/index.html', content: site(uploaded)['index.html'] },
      { name: 'app/README', type: 'symlink', linkname: 'index.html' },
    ]);
    const res = await upload(c, svc, body, { query: 'context_dir=app&dockerfile_path=app/Dockerfile' });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ source: 'upload', status: 'queued', repo_url: null, context_dir: 'app' });
    const b = await waitForBuild(c, svc, res.body.id);
    expect(b.status, b.error).toBe('succeeded');
    await until(
      () => c.get(`${c.base}/${svc}`).then((r) => r.body),
      (s) => s.status === 'running',
      60_000,
    );
    expect(await served(c.vpcId, svc, b.deployment_id)).toContain(uploaded);
    // A plain tar works as well as a gzip'd one.
    const plain = await upload(
      c,
      svc,
      await archive(
        [
          { name: 'Dockerfile', content: site('plain').Dockerfile },
          { name: 'index.html', content: 'plain' },
        ],
        false,
      ),
      {
        type: 'application/x-tar',
        query: 'deploy=false',
      },
    );
    expect((await waitForBuild(c, svc, plain.body.id)).status).toBe('succeeded');
  });

  it('refuses what is over the limit, not an archive, or escapes its root, with nothing queued', async () => {
    const svc = await newService('bad-uploads');
    const tooBig = await upload(c, svc, Buffer.alloc(1024 * 1024 + 1));
    expect(tooBig).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    const cases: [string, Buffer, RegExp][] = [
      ['not an archive', Buffer.from('this is not a tar file at all, not even close'.repeat(20)), /not a valid tar archive/],
      ['broken gzip', Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(100, 7)]), /not a valid gzip-compressed tar archive/],
      ['empty', Buffer.alloc(0), /holds no file/],
      [
        '..',
        await archive([
          { name: 'Dockerfile', content: 'FROM x' },
          { name: '../escape', content: 'x' },
        ]),
        /\.\.\/escape: escapes the archive's root/,
      ],
      ['.. inside', await archive([{ name: 'a/../../escape', content: 'x' }]), /escapes the archive's root/],
      ['absolute', await archive([{ name: '/etc/cron.d/evil', content: 'x' }]), /\/etc\/cron.d\/evil: absolute paths are not allowed/],
      [
        'symlink out',
        await archive([{ name: 'passwd', type: 'symlink', linkname: '/etc/passwd' }]),
        /passwd: a link pointing outside the archive \(\/etc\/passwd\)/,
      ],
      ['symlink up', await archive([{ name: 'a/up', type: 'symlink', linkname: '../../..' }]), /a\/up: a link pointing outside the archive/],
      [
        'through a link',
        await archive([
          { name: 'here', type: 'symlink', linkname: '.' },
          { name: 'here/../escape', content: 'x' },
        ]),
        /escapes the archive's root/,
      ],
      ['device', await archive([{ name: 'null', type: 'character-device' }]), /null: devices and FIFOs are not allowed/],
      ['fifo', await archive([{ name: 'pipe', type: 'fifo' }]), /devices and FIFOs are not allowed/],
      ['hard link out', await archive([{ name: 'shadow', type: 'link', linkname: '../../etc/shadow' }]), /escapes the archive's root/],
    ];
    for (const [what, body, why] of cases) {
      const res = await upload(c, svc, body);
      expect(res.status, what).toBe(400);
      expect(res.body, what).toMatchObject({ code: 'invalid_archive', field: 'archive' });
      expect(res.body.error, what).toMatch(why);
    }
    expect((await upload(c, svc, Buffer.from('x'), { type: 'text/plain' })).body.code).toBe('invalid_content_type');
    expect((await c.get(`${c.base}/${svc}/builds`)).body.items).toEqual([]);
  });
});

describe('the URL guard', () => {
  it(`refuses every URL of the corpus (${REFUSED_URLS.length}) with a 400 naming repo_url and saying why`, async () => {
    const svc = await newService('guarded');
    expect(REFUSED_URLS.length).toBeGreaterThanOrEqual(30);
    for (const { url, why } of REFUSED_URLS) {
      const res = await gitBuild(svc, { repo_url: url });
      expect(res.status, url).toBe(400);
      expect(res.body, url).toMatchObject({ field: 'repo_url', code: 'url_not_allowed' });
      expect(res.body.error, url).toMatch(/^repo_url: /);
      expect(res.body.error, url).toMatch(why);
    }
    expect((await c.get(`${c.base}/${svc}/builds`)).body.items).toEqual([]);
  });

  it('refuses bad refs and paths with a 400 naming the field', async () => {
    const svc = services[services.length - 1]!;
    for (const [body, field] of [
      [{ repo_url: git.url('site'), ref: '--upload-pack=touch /tmp/x' }, 'ref'],
      [{ repo_url: git.url('site'), ref: 'a..b' }, 'ref'],
      [{ repo_url: git.url('site'), dockerfile_path: '../Dockerfile' }, 'dockerfile_path'],
      [{ repo_url: git.url('site'), context_dir: '/etc' }, 'context_dir'],
    ] as const) {
      const res = await gitBuild(svc, body);
      expect(res.status).toBe(400);
      expect(res.body.field).toBe(field);
    }
  });
});

describe('cancel, limits and restarts', () => {
  let svc: string;

  it('cancels a build in the middle of a step: cancelled within seconds, no image, no build container', async () => {
    svc = await newService('sleepy');
    const res = await gitBuild(svc, { repo_url: git.url('sleeper') });
    const log = await logMatching(c, svc, res.body.id, SLEEPING);
    const stepContainer = SLEEPING.exec(log)![1]!;
    const layer = /RUN echo preparing[^\n]*\n(?:[^\n]*\n)*? ---> ([0-9a-f]{12})\n/.exec(log)![1]!;
    expect(await containerExists(stepContainer)).toBe(true);
    expect(await imageExists(layer)).toBe(true);

    const asked = Date.now();
    const cancel = await c.post(`${c.base}/${svc}/builds/${res.body.id}/cancel`);
    expect(cancel.status).toBe(202);
    const b = await waitForBuild(c, svc, res.body.id, (x) => FINISHED.includes(x.status), 10_000);
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(b).toMatchObject({ status: 'cancelled', image: null, error: 'cancelled' });
    await until(
      () => containerExists(stepContainer),
      (exists) => !exists,
      10_000,
    );
    expect(await imageExists(`pier-build/${svc}:${b.id}`)).toBe(false);
    expect(await imageExists(layer)).toBe(false);
    // Finished: a second cancel is a 409.
    expect((await c.post(`${c.base}/${svc}/builds/${res.body.id}/cancel`)).body.code).toBe('build_finished');
  });

  it('runs at most two builds per workspace and queues the rest in order; another workspace is not held up', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await gitBuild(svc, { repo_url: git.url('sleeper'), deploy: false })).body.id);
    const status = async () => Promise.all(ids.map(async (id) => (await c.get(`${c.base}/${svc}/builds/${id}`)).body.status));
    await until(status, (s) => s[0] === 'running' && s[1] === 'running', 30_000);
    const other = { workspaceId: randomUUID(), vpcId: randomUUID() };
    otherVpcs.push(other.vpcId);
    const elsewhere = await newService('elsewhere', { scope: other });
    const otherBase = `/api/v1/workspaces/${other.workspaceId}/vpcs/${other.vpcId}/services/${elsewhere}/builds`;
    const outside = await c.request('POST', `${otherBase}/git`, { repo_url: git.url('sleeper'), deploy: false }, { scope: other });
    await until(
      () => c.request('GET', `${otherBase}/${outside.body.id}`, undefined, { scope: other }).then((r) => r.body.status),
      (s) => s === 'running',
      30_000,
    );
    // Still two at a time here, the third waiting its turn.
    expect(await status()).toEqual(['running', 'running', 'queued']);
    // A queued build is cancelled at once.
    const third = await c.post(`${c.base}/${svc}/builds/${ids[2]}/cancel`);
    expect(third.body).toMatchObject({ status: 'cancelled', error: 'cancelled before it started' });
    ids[2] = (await gitBuild(svc, { repo_url: git.url('sleeper'), deploy: false })).body.id;
    await c.post(`${c.base}/${svc}/builds/${ids[0]}/cancel`);
    await until(status, (s) => s[0] === 'cancelled' && s[1] === 'running' && s[2] === 'running', 30_000);
    for (const id of ids.slice(1)) await c.post(`${c.base}/${svc}/builds/${id}/cancel`);
    await c.request('POST', `${otherBase}/${outside.body.id}/cancel`, undefined, { scope: other });
    expect(await status()).toEqual(['cancelled', 'cancelled', 'cancelled']);
  });

  it('fails a build that runs past the time limit, leaving nothing', async () => {
    await c.restart({ PIER_BUILD_TIMEOUT_SECONDS: '4' });
    try {
      const res = await gitBuild(svc, { repo_url: git.url('sleeper') });
      const b = await waitForBuild(c, svc, res.body.id, undefined, 60_000);
      expect(b).toMatchObject({ status: 'failed', error: 'timed out: the build ran longer than the limit of 4 s', image: null });
      expect(await imageExists(`pier-build/${svc}:${b.id}`)).toBe(false);
    } finally {
      await c.restart({ PIER_BUILD_TIMEOUT_SECONDS: undefined });
    }
  });

  it('fails a build compute stops in the middle of, with the reason, and its step container goes', async () => {
    const res = await gitBuild(svc, { repo_url: git.url('sleeper') });
    const log = await logMatching(c, svc, res.body.id, SLEEPING);
    const stepContainer = SLEEPING.exec(log)![1]!;
    await c.restart();
    const b = await waitForBuild(c, svc, res.body.id, undefined, 30_000);
    expect(b).toMatchObject({ status: 'failed', error: 'compute stopped while this build ran; start it again' });
    await until(
      () => containerExists(stepContainer),
      (exists) => !exists,
      15_000,
    );
    // Nothing is running: the queue goes on after the restart.
    const next = await gitBuild(svc, { repo_url: git.url('site'), deploy: false });
    expect((await waitForBuild(c, svc, next.body.id)).status).toBe('succeeded');
  });
});

describe('roles', () => {
  it('lets a Member read builds and their logs, and only an Admin build or cancel', async () => {
    const svc = services[0]!;
    const [one] = (await c.get(`${c.base}/${svc}/builds`)).body.items;
    expect((await gitBuild(svc, { repo_url: git.url('site') }, 'developer')).status).toBe(403);
    expect((await upload(c, svc, await archive([{ name: 'Dockerfile', content: 'FROM x' }]), { role: 'developer' })).status).toBe(403);
    expect((await c.request('POST', `${c.base}/${svc}/builds/${one.id}/cancel`, undefined, { role: 'developer' })).status).toBe(403);
    expect((await c.get(`${c.base}/${svc}/builds`, 'viewer')).status).toBe(200);
    expect((await c.get(`${c.base}/${svc}/builds/${one.id}`, 'developer')).status).toBe(200);
    expect((await c.get(`${c.base}/${svc}/builds/${one.id}/logs`, 'viewer')).status).toBe(200);
    expect((await c.get(`${c.base}/${svc}/builds/${randomUUID()}`)).body.code).toBe('build_not_found');
  });

  it('records every state of a build as an event', async () => {
    const rows = await adminQuery<{ kind: string }>(
      c.db.adminUrl,
      `select distinct kind from compute.outbox where payload->>'resource_id' = $1 and kind like 'service.build.%' order by kind`,
      [services[0]],
    );
    expect(rows.map((r) => r.kind)).toEqual(['service.build.failed', 'service.build.queued', 'service.build.started', 'service.build.succeeded']);
    const cancelled = await adminQuery(c.db.adminUrl, `select 1 from compute.outbox where kind = 'service.build.cancelled'`);
    expect(cancelled.length).toBeGreaterThan(0);
  });
});
