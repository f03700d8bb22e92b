// A shell's stdin under a flood, against compute as its own process (so its memory is read
// alone, from /proc), on the real Docker engine and on the fake Kubernetes API (whose exec,
// like a kubelet, stops reading input its process does not take): a command that never reads
// its stdin must not make compute hold what the client sends (the socket stops being read
// instead), a frame over the cap closes the socket with 1009, and input that does drain
// still arrives whole.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubernetes, createTestDatabase, infra, openShell, removeVpcObjects, shellUrl, type ShellClient, type TestDatabase } from '@pier/testing';
import { ComputeProcess } from './compute-process.ts';
import { TINY_HTTP, docker, until, vpcContainers } from './support.ts';
import { MiB, floodStdin, treeRss } from './exec-flood.ts';

let db: TestDatabase;
let compute: ComputeProcess;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const base = `/api/v1/workspaces/${workspaceId}/vpcs/${vpcId}/services`;
let svc: string;

beforeAll(async () => {
  db = await createTestDatabase(infra().postgresAdminUrl);
  compute = await ComputeProcess.start(db, { workspaceId, vpcId });
  const res = await compute.call('POST', base, { name: 'web', image: TINY_HTTP, health_check_path: '/healthz' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  svc = res.body.id;
  await until(
    () => compute.call('GET', `${base}/${svc}`).then((r) => r.body.status),
    (s) => s === 'running',
    60_000,
  );
}, 120_000);

afterAll(async () => {
  await compute?.stop();
  await removeVpcObjects(vpcId);
  await db?.drop();
}, 60_000);

/** Processes in the service's containers whose command line contains `text`. */
async function processesLike(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const ct of await vpcContainers(vpcId, svc)) {
    const { Processes } = await docker.getContainer(ct.Id).top({ ps_args: '-eo pid,args' });
    for (const p of Processes ?? []) if (p.join(' ').includes(text)) found.push(p.join(' '));
  }
  return found;
}

function shell(query: Record<string, string | string[]>): Promise<ShellClient> {
  return openShell(shellUrl(`ws://127.0.0.1:${compute.httpPort}${base}/${svc}/exec`, query), compute.headers());
}

describe('stdin backpressure', () => {
  it('keeps compute flat while a client floods a command that never reads its stdin', async () => {
    const s = await shell({ command: ['sleep', '3600'], tty: 'false' });
    await new Promise((r) => setTimeout(r, 500));
    const before = await treeRss(compute.pid);
    const sent = await floodStdin(s, 300 * MiB);
    // What compute holds now, with the session still open.
    await new Promise((r) => setTimeout(r, 500));
    const after = await treeRss(compute.pid);
    const growth = after - before;
    console.log(
      `exec flood (docker): sent ${(sent / MiB).toFixed(1)} MiB; compute RSS ${(before / MiB).toFixed(1)} -> ${(after / MiB).toFixed(1)} MiB (+${(growth / MiB).toFixed(1)} MiB)`,
    );
    expect(growth).toBeLessThan(64 * MiB);
    // A client that goes while its input waits (its close frame unread) still ends the command.
    s.ws.terminate();
    await until(
      () => processesLike('sleep 3600'),
      (p) => p.length === 0,
      30_000,
      250,
    );
  }, 120_000);

  it('carries input that drains whole, through the pauses, and closes a frame over 1 MiB with 1009', async () => {
    const s = await shell({ command: ['wc', '-c'], tty: 'false' });
    const sent = await floodStdin(s, 64 * MiB);
    expect(sent).toBe(64 * MiB);
    s.control({ type: 'eof' });
    await s.closed;
    expect(s.output().trim()).toBe(String(64 * MiB));
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);

    const big = await shell({ command: ['sleep', '3600'], tty: 'false' });
    big.ws.send(Buffer.alloc(MiB + 1), { binary: true });
    expect((await big.closed).code).toBe(1009);
  }, 120_000);
});

describe('stdin backpressure on kubernetes', () => {
  let fake: FakeKubernetes;
  let kubeconfig: string;
  let kdb: TestDatabase;
  let kcompute: ComputeProcess;
  const kvpc = randomUUID();
  const kbase = `/api/v1/workspaces/${workspaceId}/vpcs/${kvpc}/services`;
  let ksvc: string;

  beforeAll(async () => {
    fake = await new FakeKubernetes().start();
    kubeconfig = await fake.writeKubeconfig();
    kdb = await createTestDatabase(infra().postgresAdminUrl);
    kcompute = await ComputeProcess.start(kdb, { workspaceId, vpcId: kvpc }, { PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig });
    const res = await kcompute.call('POST', kbase, { name: 'web', image: 'registry.example/app:v1' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ksvc = res.body.id;
    await until(
      () => kcompute.call('GET', `${kbase}/${ksvc}`).then((r) => r.body.status),
      (s) => s === 'running',
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    await kcompute?.stop();
    await fake?.stop();
    if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
    await kdb?.drop();
  }, 60_000);

  const kshell = (query: Record<string, string | string[]>) =>
    openShell(shellUrl(`ws://127.0.0.1:${kcompute.httpPort}${kbase}/${ksvc}/exec`, query), kcompute.headers());

  it('keeps compute flat while a client floods a command that never reads its stdin', async () => {
    const s = await kshell({ command: ['sleep', '3600'], tty: 'false' });
    await new Promise((r) => setTimeout(r, 500));
    const session = fake.exec.sessions.at(-1)!;
    const before = await treeRss(kcompute.pid);
    const sent = await floodStdin(s, 300 * MiB);
    await new Promise((r) => setTimeout(r, 500));
    const after = await treeRss(kcompute.pid);
    const growth = after - before;
    console.log(
      `exec flood (kubernetes): sent ${(sent / MiB).toFixed(1)} MiB; compute RSS ${(before / MiB).toFixed(1)} -> ${(after / MiB).toFixed(1)} MiB (+${(growth / MiB).toFixed(1)} MiB)`,
    );
    expect(growth).toBeLessThan(64 * MiB);
    s.ws.terminate();
    await until(
      async () => session.exit,
      (exit) => exit !== undefined,
      30_000,
      250,
    );
  }, 120_000);

  it('carries input that drains whole, through the pauses', async () => {
    const s = await kshell({ command: ['wc', '-c'], tty: 'false' });
    expect(await floodStdin(s, 64 * MiB)).toBe(64 * MiB);
    s.control({ type: 'eof' });
    await s.closed;
    expect(s.output().trim()).toBe(String(64 * MiB));
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
  }, 120_000);
});
