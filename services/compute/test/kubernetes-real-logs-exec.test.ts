// Logs and shells through a REAL kubelet (deploy/kube/cluster.sh, started by ./pier test):
// the pod log subresource (recent lines with timestamps, then follow) and the exec
// subresource (output, exit codes, standard input, a TTY's size, kill), as the API server
// proxies them to the node; and compute's 503 when that API server cannot be reached.
// logs-kubernetes.test.ts and kubernetes-exec.test.ts keep the fake for exact framing cases.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createLogger, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { adminQuery, realKubernetes, type RealKubernetes } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesLogSource } from '../src/cluster/kubernetes-logs.ts';
import { KubernetesShell } from '../src/cluster/kubernetes-exec.ts';
import type { LogLine } from '../src/domain/logs/log-port.ts';
import type { ShellProcess } from '../src/domain/exec/shell-port.ts';
import { startCompute, until, TINY_HTTP } from './support.ts';
import { workloadSpec } from './workload-spec.ts';

const log = createLogger('test', 'warn');
let k: RealKubernetes;
const workspaceId = randomUUID();
const vpcId = randomUUID();
const ref = { workspaceId, vpcId, serviceId: '', serviceName: 'printer' };

beforeAll(async () => {
  k = realKubernetes();
  k.requireNode();
  // A worker that prints a numbered line every 200 ms: something for the logs to show.
  const spec = workloadSpec(
    { workspaceId, vpcId },
    { name: 'printer', service_type: 'worker', command: ['/bin/busybox'], args: ['sh', '-c', 'i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.2; done'] },
    [],
    TINY_HTTP,
  );
  ref.serviceId = spec.serviceId;
  await KubernetesCluster.fromKubeconfig(k.kubeconfig, log).apply(spec);
  await until(
    () => k.list(`/api/v1/namespaces/${vpcNamespace(vpcId)}/pods`, `pier.dev/service=${spec.serviceId}`),
    (pods) => pods.length === 1 && pods[0]!.status.phase === 'Running',
    120_000,
    500,
  );
}, 150_000);

afterAll(async () => {
  if (k) await k.deleteNamespace(vpcNamespace(vpcId));
});

/** Reads a shell's output until it ends. */
async function outputOf(p: ShellProcess): Promise<string> {
  let text = '';
  for await (const chunk of p.output) text += String(chunk);
  return text;
}

describe('logs through the real kubelet', () => {
  it('reads the recent lines with their timestamps, then follows new ones', async () => {
    const source = new KubernetesLogSource(kubeConfigFrom(k.kubeconfig));
    const [replica, ...others] = await source.serviceReplicas(ref);
    expect(others).toEqual([]);
    const recent = await until(
      () => source.recent(replica!, { tail: 5 }),
      (lines) => lines.length === 5,
      30_000,
      300,
    );
    for (const l of recent) expect(l.message).toMatch(/^line-\d+$/);
    // In order, one second apart at most, and numbered one after the other.
    const numbers = recent.map((l) => Number(l.message.slice(5)));
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
    expect([...recent.map((l) => l.ts)].sort()).toEqual(recent.map((l) => l.ts));

    const last = recent.at(-1)!;
    const stop = new AbortController();
    const followed: LogLine[] = [];
    for await (const batch of source.follow(replica!, last.ts, stop.signal)) {
      followed.push(...batch.filter((l) => l.ts > last.ts));
      if (followed.length >= 3) stop.abort();
    }
    expect(Number(followed[0]!.message.slice(5))).toBeGreaterThan(numbers.at(-1)!);
    expect(followed.map((l) => l.stream)).toEqual(followed.map(() => 'stdout'));
  }, 60_000);
});

describe('shells through the real kubelet', () => {
  let shell: KubernetesShell;
  let replica: { replica: string; handle: string };

  beforeAll(async () => {
    shell = new KubernetesShell(kubeConfigFrom(k.kubeconfig));
    [replica] = (await shell.runningReplicas(ref)) as [typeof replica];
  });

  it('runs a command: its output, stdout and stderr, and its exit code', async () => {
    const p = await shell.open(ref, replica, { command: ['/bin/busybox', 'sh', '-c', 'echo out; echo err >&2; exit 3'], tty: false, user: 0 });
    const text = await outputOf(p);
    expect(text).toContain('out\n');
    expect(text).toContain('err\n');
    expect(await p.exited).toBe(3);
  });

  it('feeds standard input, and ends it', async () => {
    const p = await shell.open(ref, replica, { command: ['/bin/busybox', 'cat'], tty: false, user: 0 });
    p.write(Buffer.from('hello through the kubelet\n'));
    p.endInput();
    expect(await outputOf(p)).toBe('hello through the kubelet\n');
    expect(await p.exited).toBe(0);
  });

  it('gives a TTY of the size asked for, resized on demand', async () => {
    const p = await shell.open(ref, replica, { command: ['/bin/busybox', 'sh'], tty: true, user: 0, cols: 100, rows: 40 });
    const text = outputOf(p);
    p.write(Buffer.from('stty size\n'));
    await new Promise((r) => setTimeout(r, 500));
    await p.resize(120, 50);
    await new Promise((r) => setTimeout(r, 500));
    p.write(Buffer.from('stty size; exit 5\n'));
    expect(await p.exited).toBe(5);
    const out = await text;
    expect(out).toContain('40 100');
    expect(out).toContain('50 120');
  });

  it('kills a command that would run on, and what it started', async () => {
    const p = await shell.open(ref, replica, { command: ['/bin/busybox', 'sh', '-c', '/bin/busybox sleep 301 & /bin/busybox sleep 302'], tty: false, user: 0 });
    const text = outputOf(p);
    const running = async () => outputOf(await shell.open(ref, replica, { command: ['/bin/busybox', 'ps'], tty: false, user: 0 }));
    await until(running, (listing) => /sleep 302/.test(listing), 10_000, 100);
    const started = Date.now();
    await p.kill();
    expect(await p.exited).toBeNull();
    await text;
    expect(Date.now() - started).toBeLessThan(10_000);
    // Nothing it started is left running in the container.
    const listing = await until(running, (l) => !/sleep 30[12]/.test(l), 10_000, 200);
    expect(listing).not.toMatch(/sleep 30[12]/);
  });
});

describe('compute with the API server away', () => {
  it('answers 503 and writes nothing when the real API server cannot be reached', async () => {
    const away = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: await k.unreachableKubeconfig() });
    try {
      const res = await away.post(away.base, { name: 'nowhere', image: TINY_HTTP });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('cluster_unavailable');
      expect(await adminQuery(away.db.adminUrl, 'select count(*)::int as n from compute.services')).toEqual([{ n: 0 }]);
      expect((await k.request('GET', `/api/v1/namespaces/${vpcNamespace(away.vpcId)}`)).status).toBe(404);
    } finally {
      await away.stop();
    }
  });
});
