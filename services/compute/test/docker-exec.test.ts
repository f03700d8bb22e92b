// Shells (exec) on the docker adapter, against compute itself and real containers: what
// goes through the WebSocket, who may open one, how a session ends, and what is recorded.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { connect, type NatsConnection, type Subscription } from 'nats';
import { IDENTITY_HEADER, type Role } from '@pier/kit';
import { adminQuery, infra, openShell, shellUrl, type ShellClient } from '@pier/testing';
import { startCompute, until, cleanDocker, docker, TINY_HTTP, EXITS, type Compute } from './support.ts';
import { DockerShell } from '../src/cluster/docker-exec.ts';
import { DockerEngine } from '../src/cluster/docker-engine.ts';

let c: Compute;
let nc: NatsConnection;
let events: Subscription;
const seen: { kind: string; resource_id: string; actor: Record<string, unknown> | null; data: Record<string, any> }[] = [];
let web: { id: string; name: string };

beforeAll(async () => {
  c = await startCompute({ PIER_COMPUTE_EXEC_IDLE_TIMEOUT_SECONDS: '3', PIER_COMPUTE_EXEC_MAX_SECONDS: '8' });
  nc = await connect({ servers: infra().natsUrl });
  events = nc.subscribe(`pier.events.${c.workspaceId}.${c.vpcId}.>`);
  void (async () => {
    for await (const m of events) seen.push(JSON.parse(new TextDecoder().decode(m.data)));
  })();
  web = (await c.post(c.base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz', min_replicas: 2 })).body;
  await until(
    () => c.get(`${c.base}/${web.id}`).then((r) => r.body.status),
    (s) => s === 'running',
  );
}, 90_000);

afterAll(async () => {
  await c?.stop();
  await nc?.close();
  if (c) await cleanDocker(c.vpcId);
}, 60_000);

/** The exec URL of a service, with these query parameters (arrays repeat the key). */
function execUrl(serviceId: string, query: Record<string, string | string[]> = {}): string {
  return shellUrl(`${c.url.replace(/^http/, 'ws')}${c.base}/${serviceId}/exec`, query);
}

async function shell(query: Record<string, string | string[]> = {}, role: Role = 'owner', serviceId = web.id): Promise<ShellClient> {
  return openShell(execUrl(serviceId, query), { [IDENTITY_HEADER]: await c.token(role) });
}

async function refusal(query: Record<string, string | string[]>, role: Role = 'owner', serviceId = web.id): Promise<{ status: number; body: any }> {
  return shell(query, role, serviceId).then(
    (s) => {
      s.ws.close();
      throw new Error('the handshake was accepted');
    },
    (err: { status: number; body: any }) => ({ status: err.status, body: err.body }),
  );
}

/** Processes in the service's containers whose command line contains `text`. */
async function processesLike(text: string): Promise<string[]> {
  const containers = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${web.id}`] }) });
  const found: string[] = [];
  for (const ct of containers) {
    const { Processes } = await docker.getContainer(ct.Id).top({ ps_args: '-eo pid,args' });
    for (const p of Processes ?? []) if (p.join(' ').includes(text)) found.push(p.join(' '));
  }
  return found;
}

describe('a shell in a running replica', () => {
  it('runs a command: its output arrives, then its exit code, then a normal close', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'echo hello from $(id -u); echo to-stderr >&2'], tty: 'false' });
    const closed = await s.closed;
    expect(s.output()).toContain('hello from 1000'); // the service's own user, not root
    expect(s.output()).toContain('to-stderr');
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
    expect(closed.code).toBe(1000);
  });

  it('reports a failing exit code', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'exit 3'], tty: 'false' });
    await s.closed;
    expect(s.messages).toEqual([{ type: 'exit', code: 3 }]);
  });

  it('gives /bin/sh on a terminal by default; a resize reaches it', async () => {
    const s = await shell({ cols: '100', rows: '30' });
    s.send('stty size\n');
    await s.waitFor('30 100');
    s.control({ type: 'resize', cols: 132, rows: 43 });
    await new Promise((r) => setTimeout(r, 200));
    s.send('stty size\n');
    await s.waitFor('43 132');
    s.send('exit 7\n');
    await s.closed;
    expect(s.messages.at(-1)).toEqual({ type: 'exit', code: 7 });
  });

  it('ends a command reading stdin when the client says eof (no terminal)', async () => {
    const s = await shell({ command: 'cat', tty: 'false' });
    s.send('line one\n');
    s.send('line two\n');
    s.control({ type: 'eof' });
    await s.closed;
    expect(s.output()).toBe('line one\nline two\n');
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
  });

  it('carries a large output whole, in order', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo END'], tty: 'false' });
    await s.closed;
    expect(s.output().length).toBe(3_000_004);
    expect(s.output().endsWith('xEND\n')).toBe(true);
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
  });

  it('opens in the replica asked for', async () => {
    const containers = await docker.listContainers({ filters: JSON.stringify({ label: [`pier.service=${web.id}`, 'pier.replica=1'] }) });
    const s = await shell({ command: 'hostname', tty: 'false', replica: '1' });
    await s.closed;
    expect(s.output().trim()).toBe(containers[0]!.Id.slice(0, 12));
  });

  it('ends the command and what it started when the client goes', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'sleep 4242 & sleep 4343'], tty: 'false' });
    await until(
      () => processesLike('sleep 4'),
      (p) => p.length === 2,
      10_000,
      100,
    );
    s.ws.close();
    await until(
      () => processesLike('sleep 4'),
      (p) => p.length === 0,
      10_000,
      100,
    );
  });

  it('ends an idle session, and one that lasts too long', async () => {
    const idle = await shell();
    const closed = await idle.closed;
    expect(closed.code).toBe(1000);
    expect(idle.messages).toEqual([{ type: 'error', message: 'the session was idle too long' }]);

    // Busy all the time, yet ended at the maximum length (8 s here).
    const started = Date.now();
    const busy = await shell({ command: ['/bin/sh', '-c', 'while true; do echo tick; sleep 1; done'], tty: 'false' });
    await busy.closed;
    expect(Date.now() - started).toBeGreaterThan(7_000);
    expect(busy.messages).toEqual([{ type: 'error', message: 'the session reached its maximum length' }]);
    await until(
      () => processesLike('while true'),
      (p) => p.length === 0,
      10_000,
      100,
    );
  }, 30_000);

  it('records who opened which session and how it ended, never what went through it nor the arguments', async () => {
    // People type secrets into command lines: only the program's name and the argument count are recorded.
    const secret = `hunter2-${Date.now()}`;
    const s = await shell({ command: ['/bin/sh', '-c', `TOKEN=${secret}; echo secret-output-$((6*7)); exit 5`], tty: 'false' });
    await s.closed;
    expect(s.output()).toContain('secret-output-42');
    const ended = await until(
      async () => seen.filter((e) => e.kind === 'service.exec.ended' && e.data.exit_code === 5),
      (list) => list.length === 1,
    );
    const started = seen.filter((e) => e.kind === 'service.exec.started' && e.data.session_id === ended[0]!.data.session_id);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      resource_id: web.id,
      data: { email: 'owner@example.test', replica: '0', tty: false, program: 'sh', arg_count: 2 },
    });
    expect(ended[0]).toMatchObject({
      resource_id: web.id,
      data: { user_id: started[0]!.data.user_id, replica: '0', program: 'sh', arg_count: 2, exit_code: 5, reason: 'exited' },
    });
    // Both name who opened the session (the audit log), the end too, whenever it comes.
    expect(started[0]!.actor).toMatchObject({ user_id: started[0]!.data.user_id, email: 'owner@example.test' });
    expect(ended[0]!.actor).toEqual(started[0]!.actor);
    expect(started[0]!.data).not.toHaveProperty('command');
    expect(ended[0]!.data).not.toHaveProperty('command');
    expect(ended[0]!.data.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(seen)).not.toContain('secret-output-42');
    expect(JSON.stringify(seen)).not.toContain(secret);
    // Nor in the outbox the events went out from.
    const kept = await adminQuery(c.db.adminUrl, `select payload from compute.outbox where kind like 'service.exec.%'`);
    expect(kept.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(kept)).not.toContain(secret);
    // The idle and maximum-length sessions above were recorded with their reasons.
    const reasons = seen.filter((e) => e.kind === 'service.exec.ended').map((e) => e.data.reason);
    expect(reasons).toEqual(expect.arrayContaining(['exited', 'idle_timeout', 'max_duration', 'client_closed']));
  });
});

describe('refused before the handshake, as JSON', () => {
  it('refuses Developers and Viewers (a shell reads every secret), and lets Admins in', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      const r = await refusal({ command: 'true' }, role);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    const admin = await shell({ command: 'true', tty: 'false' }, 'admin');
    await admin.closed;
    expect(admin.messages).toEqual([{ type: 'exit', code: 0 }]);
  });

  it('refuses a service that is not running (409), an unknown service or replica (404), a bad query (400)', async () => {
    const crashed = (await c.post(c.base, { name: 'crashes', service_type: 'worker', image: EXITS })).body;
    await until(
      () => c.get(`${c.base}/${crashed.id}`).then((r) => r.body.status),
      (s) => s === 'crashed',
    );
    expect(await refusal({}, 'owner', crashed.id)).toMatchObject({ status: 409, body: { code: 'service_not_running' } });
    expect(await refusal({}, 'owner', '00000000-0000-4000-8000-000000000000')).toMatchObject({ status: 404, body: { code: 'service_not_found' } });
    expect(await refusal({ replica: '9' })).toMatchObject({ status: 404, body: { code: 'replica_not_found' } });
    expect(await refusal({ tty: 'maybe' })).toMatchObject({ status: 400, body: { field: 'tty' } });
    expect(await refusal({ cols: '0' })).toMatchObject({ status: 400, body: { field: 'cols' } });
  });

  it('answers a plain GET with 426', async () => {
    const res = await c.get(`${c.base}/${web.id}/exec`);
    expect(res.status).toBe(426);
    expect(res.body.code).toBe('upgrade_required');
  });
});

describe('the docker adapter', () => {
  it('keeps a quiet shell open past the engine request deadline', async () => {
    const shellPort = new DockerShell(new DockerEngine(undefined, 1000));
    const ref = { workspaceId: c.workspaceId, vpcId: c.vpcId, serviceId: web.id, serviceName: web.name };
    const [replica] = await shellPort.runningReplicas(ref);
    const proc = await shellPort.open(ref, replica!, { command: ['cat'], tty: false, user: 1000 });
    let out = '';
    proc.output.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise((r) => setTimeout(r, 2500));
    proc.write(Buffer.from('still here\n'));
    proc.endInput();
    expect(await proc.exited).toBe(0);
    expect(out).toBe('still here\n');
  });
});
