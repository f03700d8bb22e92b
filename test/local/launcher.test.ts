// `./pier up`'s launcher for real: the embedded PostgreSQL, Debian's nats-server and the
// six services as its children, on free ports. Its output in a pipe is JSON lines without
// health checks; and a SIGKILL of the launcher (no chance to clean up) still stops every
// child and frees every port, because the kernel tells them (parent-death.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, isAlive, testEdge } from '@pier/testing';
import { portInUse } from '../../deploy/local/children.ts';
import { which } from '../../deploy/local/which.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PORT_VARS = [
  'PIER_GATEWAY_PORT',
  'PIER_GATEWAY_METRICS_PORT',
  'PIER_AUTH_HTTP_PORT',
  'PIER_AUTH_GRPC_PORT',
  'PIER_COMPUTE_HTTP_PORT',
  'PIER_DATABASES_HTTP_PORT',
  'PIER_SECRETS_HTTP_PORT',
  'PIER_SECRETS_GRPC_PORT',
  'PIER_EVENTS_HTTP_PORT',
  'PIER_POSTGRES_PORT',
  'PIER_LOCAL_NATS_PORT',
];

// The edge compute makes: one of this test's own, on free ports (not the machine's 80 and 443).
const edge = testEdge();
let home: string;
let launcher: ChildProcess;
const ports: Record<string, number> = {};
const output: string[] = [];

/** Every process below `pid` in the process tree, from /proc. */
async function descendants(pid: number): Promise<{ pid: number; command: string }[]> {
  const parents = new Map<number, number[]>();
  const commands = new Map<number, string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      (parents.get(ppid) ?? parents.set(ppid, []).get(ppid)!).push(Number(entry));
      commands.set(Number(entry), (await readFile(`/proc/${entry}/cmdline`, 'utf8')).replaceAll('\0', ' ').trim());
    } catch {
      /* gone meanwhile */
    }
  }
  const found: { pid: number; command: string }[] = [];
  const walk = (p: number) => {
    for (const c of parents.get(p) ?? []) {
      found.push({ pid: c, command: commands.get(c) ?? '' });
      walk(c);
    }
  };
  walk(pid);
  return found;
}

beforeAll(async () => {
  // This test is about the launcher's own NATS child: ./pier test installs Debian's nats-server.
  if (!which('nats-server')) throw new Error('nats-server is not on PATH: ./pier test installs it on Debian (apt-get install nats-server)');
  home = await mkdtemp(path.join(os.tmpdir(), 'pier-launcher-'));
  // The embedded PostgreSQL runs as the postgres user when we are root: it must reach the home.
  await chmod(home, 0o755);
  for (const name of PORT_VARS) ports[name] = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PIER_HOME: home, PIER_CONFIG_DIR: path.join(home, 'config'), PIER_LOG_FORMAT: 'json' };
  for (const name of ['PIER_DATABASE_URL', 'PIER_NATS_URL', 'PIER_PUBLIC_URL', 'PIER_CLUSTER']) delete env[name];
  for (const [name, port] of Object.entries(ports)) env[name] = String(port);
  Object.assign(env, edge.env);
  launcher = spawn(process.execPath, ['--import', 'tsx', 'deploy/local/up.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let partial = '';
  launcher.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    output.push(...lines.filter(Boolean));
  });
  launcher.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const deadline = Date.now() + 110_000;
  while (!output.some((l) => l.includes('"Pier is running"'))) {
    if (launcher.exitCode !== null) throw new Error(`the launcher exited (${launcher.exitCode}):\n${output.slice(-20).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`the platform did not come up:\n${output.slice(-20).join('\n')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}, 120_000);

afterAll(async () => {
  if (launcher && launcher.exitCode === null && launcher.signalCode === null) launcher.kill('SIGKILL');
  if (home) await rm(home, { recursive: true, force: true });
  await edge.remove();
});

describe('./pier up in a pipe', () => {
  it('writes JSON lines only, with the platform summary and no health checks', async () => {
    // The API answers through the gateway, with the credentials the bootstrap wrote.
    const { token } = JSON.parse(await readFile(path.join(home, 'config', 'credentials.json'), 'utf8')) as { token: string };
    const res = await fetch(`http://127.0.0.1:${ports.PIER_GATEWAY_PORT}/api/v1/workspaces`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const records = output.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(new Set(records.map((r) => r.service))).toEqual(new Set(['pier', 'auth', 'compute', 'databases', 'secrets', 'events', 'gateway']));
    expect(records.find((r) => r.msg === 'Pier is running')).toMatchObject({
      api: `http://127.0.0.1:${ports.PIER_GATEWAY_PORT}/api/v1`,
      console: `http://127.0.0.1:${ports.PIER_GATEWAY_PORT}/`,
    });
    // The console it built (or found current) is served at /, under its Content-Security-Policy.
    const page = await fetch(`http://127.0.0.1:${ports.PIER_GATEWAY_PORT}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(records.some((r) => r.path === '/healthz')).toBe(false);
    expect(output.join('\n')).not.toContain(token);
  });
});

describe('a SIGKILL of the launcher', () => {
  it('stops every service, NATS and PostgreSQL, and frees every port', async () => {
    const children = await descendants(launcher.pid!);
    const names = children.map((c) => c.command);
    for (const service of ['auth', 'compute', 'databases', 'secrets', 'events', 'gateway']) {
      expect(names.some((n) => n.includes(`services/${service}/src/main.ts`))).toBe(true);
    }
    expect(names.some((n) => n.includes('nats-server'))).toBe(true);
    expect(names.some((n) => /postgres\b.* -D /.test(n))).toBe(true);

    launcher.kill('SIGKILL');
    const deadline = Date.now() + 30_000;
    let left = children.filter((c) => isAlive(c.pid));
    while (left.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      left = left.filter((c) => isAlive(c.pid));
    }
    expect(left.map((c) => c.command)).toEqual([]);
    for (const [name, port] of Object.entries(ports)) expect(await portInUse(port), `${name} ${port}`).toBe(false);
  }, 60_000);
});
