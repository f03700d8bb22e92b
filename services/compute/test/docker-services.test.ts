// compute against the real Docker engine, with the images deploy/images builds
// (pier/tiny-http: a web server with /healthz; pier/exits: exits at once).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { connect, type NatsConnection, type Subscription } from 'nats';
import { startCompute, until, cleanDocker, vpcContainers, docker, TINY_HTTP, EXITS, type Compute } from './support.ts';
import { createLogger } from '@pier/kit';
import { infra, socketLink } from '@pier/testing';
import { DockerCluster } from '../src/cluster/docker.ts';
import { UnconfiguredSecrets } from '../src/secrets/unconfigured.ts';
import { shellIn } from './disk-backup-support.ts';

let c: Compute;
let nc: NatsConnection;
let events: Subscription;
const seen: { kind: string; resource_id: string; data: Record<string, unknown> }[] = [];
// A relay in front of the real Docker engine, so a test can take the cluster away and back.
const link = socketLink({ path: '/var/run/docker.sock' });
const dockerHost = `unix://${link.address}`;

beforeAll(async () => {
  await link.up();
  c = await startCompute({ PIER_DOCKER_HOST: dockerHost });
  nc = await connect({ servers: infra().natsUrl });
  events = nc.subscribe(`pier.events.${c.workspaceId}.${c.vpcId}.>`);
  void (async () => {
    for await (const m of events) seen.push(JSON.parse(new TextDecoder().decode(m.data)));
  })();
}, 60_000);

afterAll(async () => {
  await link.up().catch(() => undefined);
  await c?.stop();
  await nc?.close();
  await cleanDocker(c.vpcId);
  await docker
    .getImage('pier/tiny-http:compute-test')
    .remove()
    .catch(() => undefined);
  await link.down();
}, 60_000);

const status = (id: string) => c.get(`${c.base}/${id}`).then((r) => r.body);
const settle = (id: string, want: string, ms = 30_000) =>
  until(
    () => status(id),
    (s) => s.status === want,
    ms,
  );
const containersOf = async (serviceId: string) => (await vpcContainers(c.vpcId)).filter((x) => x.Labels['pier.service'] === serviceId);

async function rows(sql: string, params: unknown[] = []): Promise<any[]> {
  const client = new pg.Client({ connectionString: c.db.adminUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe('web service on docker', () => {
  let web: any;

  it('creates a web service that runs, with the instance type, user, labels and network of the spec', async () => {
    const res = await c.post(c.base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz', instance_type: 'svc.micro' });
    expect(res.status).toBe(201);
    web = res.body;
    expect(web).toMatchObject({ name: 'web', service_type: 'web', port: 8080, run_as_user: 1000, min_replicas: 1, status: 'creating', image: TINY_HTTP });
    expect(web.resources).toEqual({ cpu: 0.5, memory_mib: 512 });
    await settle(web.id, 'running');

    const [container] = await containersOf(web.id);
    const info = await docker.getContainer(container!.Id).inspect();
    expect(info.Config.User).toBe('1000');
    expect(info.HostConfig.NanoCpus).toBe(0.5e9);
    expect(info.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(info.HostConfig.RestartPolicy).toEqual({ Name: 'on-failure', MaximumRetryCount: 3 });
    expect(info.Config.Labels).toMatchObject({ 'pier.managed': 'true', 'pier.service': web.id, 'pier.deployment': web.current_deployment_id });
    const net = info.NetworkSettings.Networks[`pier-vpc-${c.vpcId}`]!;
    expect(net.Aliases).toContain('web');
    const page = await fetch(`http://${net.IPAddress}:8080/healthz`);
    expect(page.status).toBe(200);
  });

  it('lists services with live status in one cluster call', async () => {
    const res = await c.get(c.base);
    expect(res.status).toBe(200);
    expect(res.body.items.map((s: any) => s.name)).toContain('web');
    expect(res.body.next_cursor).toBeNull();
    expect(res.headers.get('x-pier-cluster-calls')).toBe('1');
  });

  it('refuses a second service of the same name with 409', async () => {
    const res = await c.post(c.base, { name: 'web' });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'already_exists' });
  });

  it('reads crashed on the next GET once its container is killed outside the platform', async () => {
    const [container] = await containersOf(web.id);
    await docker.getContainer(container!.Id).kill();
    const after = await status(web.id);
    expect(after.status).toBe('crashed');
    expect(after.status_message).toMatch(/exited with code 137/);
  });

  it('restarts: restarting, then running again on new containers', async () => {
    const [before] = await containersOf(web.id);
    const res = await c.post(`${c.base}/${web.id}/restart`);
    expect(res.status).toBe(202);
    expect(res.body.service.status).toBe('restarting');
    expect(res.body.deployment).toMatchObject({ reason: 'restart', image: TINY_HTTP, status: 'deploying' });
    await settle(web.id, 'running');
    const after = await containersOf(web.id);
    expect(after).toHaveLength(1);
    expect(after[0]!.Id).not.toBe(before!.Id);
  });

  it('deploys a bare tag onto the configured repository and a full reference as it stands', async () => {
    // The service's image is pier/tiny-http:1; a second tag of it gives a bare tag something to find.
    await docker.getImage(TINY_HTTP).tag({ repo: 'pier/tiny-http', tag: 'compute-test' });
    const bare = await c.post(`${c.base}/${web.id}/deploy`, { image_tag: 'compute-test' });
    expect(bare.status).toBe(202);
    expect(bare.body.deployment).toMatchObject({ image: 'pier/tiny-http:compute-test', reason: 'deploy', status: 'deploying' });
    expect(bare.body.service).toMatchObject({ status: 'deploying', image: 'pier/tiny-http:compute-test' });
    await settle(web.id, 'running');
    const history = await c.get(`${c.base}/${web.id}/deployments`);
    expect(history.body.items[0]).toMatchObject({ id: bare.body.deployment.id, status: 'succeeded' });

    const full = await c.post(`${c.base}/${web.id}/deploy`, { image_tag: TINY_HTTP });
    expect(full.body.deployment.image).toBe(TINY_HTTP);
    await settle(web.id, 'running');
  });

  it('rolls back to an earlier deployment as a new deployment in the history', async () => {
    const history = (await c.get(`${c.base}/${web.id}/deployments`)).body.items;
    const target = history.find((d: any) => d.image === 'pier/tiny-http:compute-test');
    const res = await c.post(`${c.base}/${web.id}/rollback`, { deployment_id: target.id });
    expect(res.status).toBe(202);
    expect(res.body.deployment).toMatchObject({ reason: 'rollback', rollback_of: target.id, image: 'pier/tiny-http:compute-test' });
    await settle(web.id, 'running');
    const after = (await c.get(`${c.base}/${web.id}/deployments`)).body.items;
    expect(after).toHaveLength(history.length + 1);
    expect(after[0].id).toBe(res.body.deployment.id);
    expect((await c.post(`${c.base}/${web.id}/rollback`, { deployment_id: web.id })).status).toBe(404);
  });

  it('fails a deploy of an image the cluster does not have: crashed, with the reason on the deployment', async () => {
    const res = await c.post(`${c.base}/${web.id}/deploy`, { image_tag: 'no-such-tag' });
    expect(res.status).toBe(202);
    expect(res.body.deployment.status).toBe('failed');
    expect(res.body.deployment.message).toMatch(/pier\/tiny-http:no-such-tag is not available/);
    expect(res.body.service.status).toBe('crashed');
    expect((await status(web.id)).status).toBe('crashed');
    await c.post(`${c.base}/${web.id}/deploy`, { image_tag: '1' });
    await settle(web.id, 'running');
  });

  it('sets literal environment variables with a rollout, and removes one', async () => {
    const put = await c.request('PUT', `${c.base}/${web.id}/env`, {
      variables: [
        { key: 'GREETING', value: 'hello' },
        { key: 'MODE', value: 'test' },
      ],
    });
    expect(put.status).toBe(200);
    expect(put.body.deployment).toMatchObject({ reason: 'env', status: 'deploying' });
    expect(put.body.variables.map((v: any) => [v.key, v.value])).toEqual([
      ['GREETING', 'hello'],
      ['MODE', 'test'],
    ]);
    await settle(web.id, 'running');
    const [container] = await containersOf(web.id);
    const ip = container!.NetworkSettings.Networks[`pier-vpc-${c.vpcId}`]!.IPAddress;
    const seenEnv = await (await fetch(`http://${ip}:8080/cgi-bin/env`)).text();
    expect(seenEnv).toMatch(/^GREETING=hello$/m);

    const mode = put.body.variables.find((v: any) => v.key === 'MODE');
    const del = await c.request('DELETE', `${c.base}/${web.id}/env/${mode.id}`);
    expect(del.status).toBe(204);
    expect((await c.get(`${c.base}/${web.id}/env`)).body.variables.map((v: any) => v.key)).toEqual(['GREETING']);
    await settle(web.id, 'running');
    const [again] = await containersOf(web.id);
    const info = await docker.getContainer(again!.Id).inspect();
    expect(info.Config.Env).toContain('GREETING=hello');
    expect(info.Config.Env.some((e: string) => e.startsWith('MODE='))).toBe(false);
  });

  it('runs min_replicas containers and rolls configuration changes out (PATCH)', async () => {
    const res = await c.request('PATCH', `${c.base}/${web.id}`, {
      min_replicas: 2,
      max_replicas: 3,
      command: ['/bin/busybox'],
      args: ['httpd', '-f', '-p', '8080', '-h', '/www'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ min_replicas: 2, max_replicas: 3, status: 'deploying' });
    await settle(web.id, 'running');
    const all = await containersOf(web.id);
    expect(all).toHaveLength(2);
    const info = await docker.getContainer(all[0]!.Id).inspect();
    expect(info.Config.Entrypoint).toEqual(['/bin/busybox']);
    expect(info.Config.Cmd).toEqual(['httpd', '-f', '-p', '8080', '-h', '/www']);
  });

  it('publishes status changes through the outbox to NATS', async () => {
    await until(
      async () => seen.filter((e) => e.resource_id === web.id && e.kind === 'service.status_changed'),
      (l) => l.some((e) => e.data.to === 'running'),
      10_000,
    );
    expect(seen.some((e) => e.kind === 'service.created' && e.resource_id === web.id)).toBe(true);
    expect(seen.some((e) => e.kind === 'service.deployment_requested' && e.resource_id === web.id)).toBe(true);
    // Literal values stay out of events: only keys travel.
    expect(JSON.stringify(seen)).not.toContain('hello');
  });

  it('deletes: 202 deleting, then deleted, gone from lists and from the cluster', async () => {
    const res = await c.request('DELETE', `${c.base}/${web.id}`);
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('deleting');
    const done = await settle(web.id, 'deleted');
    expect(done.deleted_at).not.toBeNull();
    expect((await c.get(c.base)).body.items.some((s: any) => s.id === web.id)).toBe(false);
    expect(await containersOf(web.id)).toHaveLength(0);
    // The name is free again.
    const again = await c.post(c.base, { name: 'web' });
    expect(again.status).toBe(201);
  });
});

describe('other service types on docker', () => {
  it('crash-loops an image that exits: crashed, with the exit code', async () => {
    const res = await c.post(c.base, { name: 'crasher', image: EXITS, service_type: 'worker' });
    expect(res.status).toBe(201);
    expect(res.body.port).toBeNull();
    const s = await settle(res.body.id, 'crashed');
    expect(s.status_message).toMatch(/exited with code 1|restart-looping/);
    const history = await c.get(`${c.base}/${res.body.id}/deployments`);
    expect(history.body.items[0]).toMatchObject({ status: 'failed' });
  });

  it('never reads a crash loop as running, however long ago its container was created', async () => {
    // A web service without a health check counts as ready after MIN_READY_MS up; the
    // restart policy keeps restarting the same container, so "up" must be since the last start.
    const res = await c.post(c.base, { name: 'flapper', image: EXITS });
    expect(res.status).toBe(201);
    const seen = new Set<string>();
    const until = Date.now() + 8_000;
    while (Date.now() < until) {
      seen.add((await status(res.body.id)).status);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen.has('running')).toBe(false);
    expect(seen.has('crashed')).toBe(true);
  });

  it('runs a worker without a port', async () => {
    const res = await c.post(c.base, { name: 'worker', image: TINY_HTTP, service_type: 'worker' });
    expect(res.body).toMatchObject({ service_type: 'worker', port: null });
    await settle(res.body.id, 'running');
    expect(await containersOf(res.body.id)).toHaveLength(1);
  });

  it('reads scaled for an on_demand service at zero replicas', async () => {
    const res = await c.post(c.base, { name: 'sleepy', image: TINY_HTTP, deployment_mode: 'on_demand', min_replicas: 0 });
    expect(res.status).toBe(201);
    await settle(res.body.id, 'scaled');
    expect(await containersOf(res.body.id)).toHaveLength(0);
  });

  it('keeps a service created without an image waiting for its first deploy', async () => {
    const res = await c.post(c.base, { name: 'later' });
    expect(res.body).toMatchObject({ status: 'creating', image: null, current_deployment_id: null });
    expect((await status(res.body.id)).status).toBe('creating');
    expect((await c.post(`${c.base}/${res.body.id}/deploy`, { image_tag: 'v1' })).body.code).toBe('image_repository_unset');
    expect((await c.post(`${c.base}/${res.body.id}/restart`)).status).toBe(409);
    const put = await c.request('PUT', `${c.base}/${res.body.id}/env`, { variables: [{ key: 'A', value: '1' }] });
    expect(put.body.deployment).toBeNull();
    const dep = await c.post(`${c.base}/${res.body.id}/deploy`, { image_tag: TINY_HTTP });
    expect(dep.status).toBe(202);
    await settle(res.body.id, 'running');
    const [container] = await containersOf(res.body.id);
    expect((await docker.getContainer(container!.Id).inspect()).Config.Env).toContain('A=1');
  });
});

describe('cron services and disks on docker', () => {
  it('runs a cron service on its schedule: one container per tick, status from the last run', async () => {
    // Schedules that do not come round while the test runs (compute's own scheduler runs
    // meanwhile), then driven to their next tick below.
    const ok = await c.post(c.base, {
      name: 'tick',
      service_type: 'cron',
      cron_schedule: '0 0 1 1 *',
      image: EXITS,
      command: ['/bin/busybox', 'sh', '-c', 'echo tick; exit 0'],
    });
    const bad = await c.post(c.base, {
      name: 'tock',
      service_type: 'cron',
      cron_schedule: '@yearly',
      image: EXITS,
      command: ['/bin/busybox', 'sh', '-c', 'exit 3'],
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ service_type: 'cron', cron_schedule: '0 0 1 1 *', port: null });
    await settle(ok.body.id, 'running');
    await settle(bad.body.id, 'running');
    // Nothing runs between ticks: the schedule is a template container that is never started.
    expect((await containersOf(ok.body.id)).map((x) => [x.Labels['pier.role'], x.State])).toEqual([['template', 'created']]);

    // Another installation's compute on the same engine has a cron template of its own, due
    // at the same tick: this compute never starts its runs.
    const foreignService = crypto.randomUUID();
    const foreign = await docker.createContainer({
      name: `pier-foreign-${foreignService.slice(0, 8)}-template`,
      Image: EXITS,
      Cmd: ['/bin/busybox', 'true'],
      Labels: {
        'pier.managed': 'true',
        'pier.kind': 'service',
        'pier.service': foreignService,
        'pier.deployment': crypto.randomUUID(),
        'pier.role': 'template',
        'pier.cron-schedule': '0 0 1 1 *',
      },
    });

    // The scheduler compute runs every few seconds, driven here at the next new year
    // instead of waiting for the wall clock to get there; it knows this compute's services
    // as compute's own wiring tells it (server.ts: the store's knownServiceIds).
    const scheduler = new DockerCluster({
      host: dockerHost,
      secrets: new UnconfiguredSecrets(),
      logger: createLogger('test', 'warn'),
      ownedServices: async (ids) => new Set((await rows('select id from compute.services where id = any($1)', [ids])).map((r) => r.id)),
    }).scheduler;
    const next = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1, 0, 0, 5));
    const started = await scheduler.tick(next);
    const foreignRuns = (await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`pier.service=${foreignService}`] }) })).length;
    await foreign.remove({ force: true });
    expect(foreignRuns).toBe(1); // its template alone
    expect(started).toHaveLength(2);
    expect(await scheduler.tick(next)).toHaveLength(0); // a tick runs once

    const runs = await until(
      async () => (await containersOf(ok.body.id)).filter((x) => x.Labels['pier.role'] === 'run'),
      (l) => l.length === 1 && l[0]!.State === 'exited',
    );
    expect(runs[0]!.Status).toMatch(/Exited \(0\)/);
    expect((await status(ok.body.id)).status).toBe('running');
    const failed = await settle(bad.body.id, 'crashed');
    expect(failed.status_message).toMatch(/exited with code 3/);
  });

  it("mounts a named volume for a disk, writable by the service's user, and removes it with the service", async () => {
    const res = await c.post(c.base, { name: 'store', image: TINY_HTTP, disk_size_gb: 1, disk_mount_path: '/data', run_as_user: 1234 });
    expect(res.status).toBe(201);
    await settle(res.body.id, 'running');
    const [container] = await containersOf(res.body.id);
    const info = await docker.getContainer(container!.Id).inspect();
    expect(info.Mounts).toEqual([expect.objectContaining({ Type: 'volume', Name: `pier-disk-${res.body.id}`, Destination: '/data' })]);
    // The replica runs as 1234 with no-new-privileges: the disk was handed to that user.
    const written = await shellIn(container!.Id, 'echo kept > /data/probe && cat /data/probe && stat -c %u /data', '1234');
    expect(written).toEqual({ code: 0, out: 'kept\n1234\n' });
    await c.request('DELETE', `${c.base}/${res.body.id}`);
    await settle(res.body.id, 'deleted');
    await expect(docker.getVolume(`pier-disk-${res.body.id}`).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});

describe('when the cluster cannot be reached', () => {
  it('answers 503 and writes nothing: create, deploy, env, delete, reads', async () => {
    const existing = await c.post(c.base, { name: 'steady', image: TINY_HTTP });
    await settle(existing.body.id, 'running');
    const count = async (table: string) => Number((await rows(`select count(*)::int as n from compute.${table}`))[0].n);
    const before = { services: await count('services'), deployments: await count('deployments'), env: await count('env_vars') };
    await link.down();
    try {
      const create = await c.post(c.base, { name: 'unreachable', image: TINY_HTTP });
      expect(create.status).toBe(503);
      expect(create.body).toMatchObject({ code: 'cluster_unavailable' });
      const createBare = await c.post(c.base, { name: 'unreachable-bare' });
      expect(createBare.status).toBe(503);
      expect((await c.post(`${c.base}/${existing.body.id}/deploy`, { image_tag: TINY_HTTP })).status).toBe(503);
      expect((await c.request('PUT', `${c.base}/${existing.body.id}/env`, { variables: [{ key: 'X', value: 'y' }] })).status).toBe(503);
      expect((await c.request('DELETE', `${c.base}/${existing.body.id}`)).status).toBe(503);
      expect((await c.get(c.base)).status).toBe(503);
      expect(await count('services')).toBe(before.services);
      expect(await count('deployments')).toBe(before.deployments);
      expect(await count('env_vars')).toBe(before.env);
      expect(await rows(`select 1 from compute.services where name like 'unreachable%'`)).toHaveLength(0);
    } finally {
      await link.up();
    }
    expect((await status(existing.body.id)).status).toBe('running');
  });
});
