// Shells (exec) on the kubernetes adapter, through compute, against the fake Kubernetes API's
// pod exec subresource (the channel protocol, v5 and the v4 fallback; commands run as local
// processes in place of containers).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { IDENTITY_HEADER, vpcNamespace } from '@pier/kit';
import { FakeKubernetes, isAlive, openShell, shellUrl, V4, V5, type ShellClient } from '@pier/testing';
import { exitCodeOf } from '@pier/kit/kubernetes';
import { startCompute, until, type Compute } from './support.ts';

let fake: FakeKubernetes;
let kubeconfig: string;
let c: Compute;
let web: { id: string };
let pods: string[];

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
  c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig });
  web = (await c.post(c.base, { name: 'web', image: 'registry.example/app:v1', min_replicas: 2 })).body;
  await until(
    () => c.get(`${c.base}/${web.id}`).then((r) => r.body.status),
    (s) => s === 'running',
  );
  pods = fake
    .list('Pod', vpcNamespace(c.vpcId))
    .map((p) => p.metadata.name as string)
    .sort();
}, 60_000);

afterAll(async () => {
  await c?.stop();
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

async function shell(query: Record<string, string | string[]>): Promise<ShellClient> {
  return openShell(shellUrl(`${c.url.replace(/^http/, 'ws')}${c.base}/${web.id}/exec`, query), { [IDENTITY_HEADER]: await c.token('admin') });
}

describe('a shell on kubernetes', () => {
  it('execs in the first running pod, container app, under the v5 channel protocol', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'echo hello; echo oops >&2; exit 3'], tty: 'false' });
    await s.closed;
    expect(s.output()).toBe('hello\noops\n');
    expect(s.messages).toEqual([{ type: 'exit', code: 3 }]);
    const session = fake.exec.sessions.at(-1)!;
    expect(session).toMatchObject({ namespace: vpcNamespace(c.vpcId), pod: pods[0], container: 'app', protocol: V5, tty: false });
    // The command runs under the wrapper that reports its PID (so ending a session can end it).
    expect(session.command.slice(-3)).toEqual(['/bin/sh', '-c', 'echo hello; echo oops >&2; exit 3']);
  });

  it('opens the pod asked for by name, and refuses one that is not a running replica', async () => {
    const s = await shell({ command: 'true', tty: 'false', replica: pods[1]! });
    await s.closed;
    expect(fake.exec.sessions.at(-1)!.pod).toBe(pods[1]);
    const refused = await shell({ replica: 'web-nope' }).catch((err: { status: number; body: any }) => err);
    expect(refused).toMatchObject({ status: 404, body: { code: 'replica_not_found' } });
  });

  it('sends the terminal size, at the start and on resize', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'read line; echo got $line'], cols: '100', rows: '30' });
    s.control({ type: 'resize', cols: 132, rows: 43 });
    await until(
      async () => fake.exec.sessions.at(-1)!.resizes.length,
      (n) => n === 2,
      5000,
      25,
    );
    expect(fake.exec.sessions.at(-1)!.resizes).toEqual([
      { Width: 100, Height: 30 },
      { Width: 132, Height: 43 },
    ]);
    s.send('x\n');
    await s.closed;
    expect(s.output()).toContain('got x');
  });

  it('closes stdin with a v5 close frame; under v4 eof ends the session instead', async () => {
    const s = await shell({ command: 'cat', tty: 'false' });
    s.send('some input\n');
    s.control({ type: 'eof' });
    await s.closed;
    expect(s.output()).toBe('some input\n');
    expect(s.messages).toEqual([{ type: 'exit', code: 0 }]);
    expect(fake.exec.sessions.at(-1)!.stdinClosed).toBe(true);

    fake.exec.protocols = [V4];
    try {
      const old = await shell({ command: ['/bin/sh', '-c', 'echo v4 works; exit 4'], tty: 'false' });
      await old.closed;
      expect(fake.exec.sessions.at(-1)!.protocol).toBe(V4);
      expect(old.output()).toBe('v4 works\n');
      expect(old.messages).toEqual([{ type: 'exit', code: 4 }]);
    } finally {
      fake.exec.protocols = [V5, V4];
    }
  });

  it('ends the command and what it started when the client goes (the kubelet would not)', async () => {
    const s = await shell({ command: ['/bin/sh', '-c', 'sleep 4545 & echo started; sleep 4646'], tty: 'false' });
    await s.waitFor('started');
    const session = fake.exec.sessions.at(-1)!;
    const pid = session.process.pid!;
    s.ws.close();
    await until(
      async () => isAlive(pid),
      (a) => !a,
      10_000,
      50,
    );
    // The second exec (the kill) went to the same pod.
    await until(
      async () => fake.exec.sessions.at(-1)!,
      (k) => k !== session && k.command.join(' ').includes(`kill -KILL -${pid}`),
      5000,
      50,
    );
  });
});

describe('exit codes from the status channel', () => {
  it('reads Success as 0, NonZeroExitCode as its code, anything else as unknown', () => {
    expect(exitCodeOf({ status: 'Success' })).toBe(0);
    expect(exitCodeOf({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '42' }] } })).toBe(42);
    expect(exitCodeOf({ status: 'Failure', reason: 'InternalError', message: 'boom' })).toBeNull();
  });
});
