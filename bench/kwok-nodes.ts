// Fake nodes for the scale benchmark: kwok (built by deploy/kube/build-kwok.sh) run as a
// process against deploy/kube/cluster.sh's cluster, managing nodes the benchmark creates
// with its annotation. Their pods go through the real API server, scheduler and
// controllers and read Running and Ready, but no container starts: the control plane can
// be made to manage far more than this machine could run. The real node is cordoned for
// the while, so every pod the benchmark causes lands on a fake node; kwok's volume stages
// bind claims of StorageClass `kwok-volume` (a record, no disk).
import { execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RealKubernetes } from '@pier/testing';

const run = promisify(execFile);
const FAKE = 'kwok.x-k8s.io/node';
export const KWOK_STORAGE_CLASS = 'kwok-volume';
/** Pod addresses kwok hands out: apart from the cluster's pod (10.88/16) and Service (10.96/16) networks. */
const POD_CIDR = '10.200.0.0/16';

export interface FakeNodes {
  names: string[];
  /** kwok's process. */
  pid: number | undefined;
  /** kwok's own log, for when pods do not come up. */
  logFile: string;
  /**
   * Uncordons the real nodes: the first thing a clean-up does, as the cluster may be shared
   * (whoever creates a pod meanwhile gets a fake node). Stop does it too.
   */
  uncordon(): Promise<void>;
  /** Uncordons the real nodes, deletes the fake ones (the pod GC removes pods left on them) and their volumes, and stops kwok. */
  stop(): Promise<void>;
}

async function wait(what: string, ms: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function startFakeNodes(
  kube: RealKubernetes,
  opts: { root: string; count: number; capacity: { cpu: string; memory: string; pods: string }; log: (line: string) => void },
): Promise<FakeNodes> {
  const { stdout } = await run('bash', [path.join(opts.root, 'deploy/kube/build-kwok.sh')], { maxBuffer: 1 << 20 });
  const dir = stdout.trim();
  const logFile = path.join(dir, `kwok-${process.pid}.log`);
  const out = createWriteStream(logFile);
  const kwok = spawn(
    path.join(dir, 'kwok'),
    [
      `--kubeconfig=${kube.kubeconfig}`,
      `--config=${path.join(dir, 'kwok.yaml')}`,
      `--manage-nodes-with-annotation-selector=${FAKE}=fake`,
      `--cidr=${POD_CIDR}`,
      // Leases keep the nodes Ready (its heartbeat stage writes their status every 10 minutes only);
      // without them the node controller marks them unreachable, and their pods not ready.
      '--node-lease-duration-seconds=40',
      // Nothing listens there: what asks a fake node's kubelet (logs, exec, metrics) is refused at once.
      '--node-ip=127.0.0.1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  kwok.stdout.pipe(out);
  kwok.stderr.pipe(out);
  const kill = () => kwok.kill('SIGKILL');
  process.once('exit', kill);
  const names = Array.from({ length: opts.count }, (_, i) => `pier-bench-kwok-${i}`);
  const cordoned: string[] = [];
  const uncordon = async () => {
    while (cordoned.length) {
      await kube.request('PATCH', `/api/v1/nodes/${cordoned[0]}`, { spec: { unschedulable: null } }, 'application/merge-patch+json');
      cordoned.shift();
    }
  };
  let createdClass = false;
  const stop = async () => {
    try {
      // The real node first: whatever fails after, the shared cluster schedules again.
      await uncordon();
      for (const n of names) await kube.request('DELETE', `/api/v1/nodes/${n}`);
      // Volumes kwok made for claims of its class (records only): those it had not removed yet.
      for (const pv of await kube.list('/api/v1/persistentvolumes'))
        if (pv.spec?.storageClassName === KWOK_STORAGE_CLASS) await kube.request('DELETE', `/api/v1/persistentvolumes/${pv.metadata.name}`);
      if (createdClass) await kube.request('DELETE', `/apis/storage.k8s.io/v1/storageclasses/${KWOK_STORAGE_CLASS}`);
    } finally {
      kwok.kill('SIGTERM');
      process.removeListener('exit', kill);
    }
  };
  try {
    const sc = await kube.request('POST', '/apis/storage.k8s.io/v1/storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: KWOK_STORAGE_CLASS },
      provisioner: 'kwok.x-k8s.io/volume',
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
    });
    createdClass = sc.status === 201;
    if (sc.status !== 201 && sc.status !== 409) throw new Error(`StorageClass ${KWOK_STORAGE_CLASS}: ${sc.status} ${JSON.stringify(sc.body)}`);
    for (const name of names) {
      const res = await kube.request('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          annotations: { [FAKE]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: { type: 'kwok', 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
        },
        status: { capacity: opts.capacity, allocatable: opts.capacity },
      });
      if (res.status !== 201) throw new Error(`node ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    await wait('fake nodes Ready', 60_000, async () => {
      const nodes = await kube.list('/api/v1/nodes');
      return names.every((n) => nodes.find((o) => o.metadata.name === n)?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    });
    for (const node of await kube.list('/api/v1/nodes')) {
      if (node.metadata.annotations?.[FAKE] || node.spec?.unschedulable) continue;
      await kube.request('PATCH', `/api/v1/nodes/${node.metadata.name}`, { spec: { unschedulable: true } }, 'application/merge-patch+json');
      cordoned.push(node.metadata.name);
    }
    opts.log(
      `  kwok: ${names.length} fake nodes of ${opts.capacity.cpu} CPUs, ${opts.capacity.memory}, ${opts.capacity.pods} pods each; cordoned ${cordoned.join(', ') || 'no real node'}`,
    );
    return { names, pid: kwok.pid, logFile, uncordon, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}
