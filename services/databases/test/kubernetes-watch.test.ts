// The kubernetes modes with their watched copies (kit's WatchCache), against the in-process
// fake serving watches: the built-in mode's StatefulSets and pods, the operator mode's
// clusters and Jobs (an operator whose CRD is not installed has none, and is not listed). A
// VPC's observation from memory with no list, the copies following a change, and live lists
// once the API server is gone. The built-in adapter runs through the watch on the real
// cluster in kubernetes-real-builtin.test.ts; the operators cannot run here.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, UnavailableError, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { FakeKubernetes, until } from '@pier/testing';
import { BuiltinKubernetesCluster } from '../src/cluster/kubernetes-builtin.ts';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { CNPG, LABELS, MOCO } from '../src/cluster/kubernetes-meta.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;

beforeAll(async () => {
  fake = await new FakeKubernetes({ watch: true }).start();
  kubeconfig = await fake.writeKubeconfig();
});

// stop() also removes the kubeconfig files written while it ran.
afterAll(() => fake?.stop());

const labels = (id: string, role?: string) => ({
  [LABELS.managedBy]: 'pier',
  [LABELS.component]: 'database',
  [LABELS.database]: id,
  ...(role ? { [LABELS.role]: role } : {}),
});

/** A database's primary as its StatefulSet controller and kubelet would leave it: the set and one ready pod. */
function seedPrimary(ns: string, id: string, ready: boolean): void {
  fake.seed({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: `db-${id.slice(0, 8)}`, namespace: ns, uid: randomUUID(), labels: labels(id) },
    spec: {},
  });
  fake.seed({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `db-${id.slice(0, 8)}-0`, namespace: ns, uid: randomUUID(), labels: labels(id, 'primary') },
    spec: { containers: [{ name: 'server', image: 'pier/pg-managed:15' }] },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [
        {
          name: 'server',
          ready,
          restartCount: 0,
          state: ready ? { running: { startedAt: new Date().toISOString() } } : { waiting: { reason: 'CrashLoopBackOff' } },
        },
      ],
    },
  });
}

/** GETs that list a namespace's StatefulSets or pods (the copies list cluster-wide, once). */
const lists = (ns: string) =>
  fake.requests.filter((r) => r.method === 'GET' && r.path.includes(`/namespaces/${ns}/`) && /\/(statefulsets|pods)$/.test(r.path)).length;

/** Once the copies are complete an observation lists nothing: waits for that, then checks ten more. */
async function noListsOnceSynced(listed: () => number, observe: () => Promise<unknown>): Promise<void> {
  await until(
    async () => {
      const before = listed();
      await observe();
      return listed() - before;
    },
    (n) => n === 0,
  );
  const before = listed();
  for (let i = 0; i < 10; i++) await observe();
  expect(listed(), 'no list while the watches are connected').toBe(before);
}

/** With the API server gone, an observation ends in a 503 (the copies are not trusted, the live lists fail). */
async function unavailableOnceGone(observe: () => Promise<unknown>): Promise<void> {
  await fake.stop();
  await expect(
    until(
      () =>
        observe().then(
          () => 'answered',
          (err: unknown) => err,
        ),
      (r) => r instanceof UnavailableError,
      10_000,
    ),
  ).resolves.toBeInstanceOf(UnavailableError);
}

describe('the built-in mode with watched copies', () => {
  it('observes a VPC from the copies, follows a change, and lists live once the API server is gone', async () => {
    const adapter = new BuiltinKubernetesCluster(kubeConfigFrom(kubeconfig), {
      postgresImage: 'pier/pg-managed:15',
      mysqlImage: 'pier/mariadb:10.11',
      domains: {},
      watch: { log },
    });
    const vpcId = randomUUID();
    const ns = vpcNamespace(vpcId);
    const [up, down] = [randomUUID(), randomUUID()];
    try {
      seedPrimary(ns, up, true);
      seedPrimary(ns, down, false);
      const seen = await until(
        () => adapter.observe(vpcId, [up, down, randomUUID()]),
        (m) => m.get(up)?.phase === 'ready' && m.get(down)?.phase === 'failed',
      );
      expect([...seen.values()].map((o) => o.phase)).toEqual(['ready', 'failed', 'absent']);
      // Until both copies are complete, an observation lists; from then on, none does.
      await noListsOnceSynced(
        () => lists(ns),
        () => adapter.observe(vpcId, [up, down]),
      );

      // The failing primary comes up: the copy follows.
      fake.objects.delete(`v1/Pod/${ns}/db-${down.slice(0, 8)}-0`);
      seedPrimary(ns, down, true);
      await until(
        () => adapter.observe(vpcId, [down]),
        (m) => m.get(down)?.phase === 'ready',
      );

      await unavailableOnceGone(() => adapter.observe(vpcId, [up]));
    } finally {
      await adapter.close();
    }
  });
});

/** Requests that list a namespace's operator clusters or Jobs (the copies list cluster-wide, once). */
const operatorLists = (ns: string) =>
  fake.requests.filter((r) => r.method === 'GET' && r.path.includes(`/namespaces/${ns}/`) && /\/(clusters|mysqlclusters|jobs)$/.test(r.path)).length;

/** A CloudNativePG Cluster as its operator reports it. */
function seedCnpg(ns: string, id: string, phase: string): void {
  fake.seed({
    apiVersion: CNPG,
    kind: 'Cluster',
    metadata: { name: `db-${id.slice(0, 8)}`, namespace: ns, uid: randomUUID(), labels: labels(id) },
    spec: { instances: 1 },
    status: { phase, readyInstances: phase === 'Cluster in healthy state' ? 1 : 0 },
  });
}

describe('the operator mode with watched copies', () => {
  it("observes a VPC from the copies of the operators' clusters and Jobs, an operator not installed having none, and lists live once the API server is gone", async () => {
    // MOCO's CRD is not installed: its kind is answered 404, as a real server without it answers.
    fake = await new FakeKubernetes({ watch: true, notServed: [MOCO] }).start();
    const adapter = new KubernetesCluster(kubeConfigFrom(await fake.writeKubeconfig()), { domains: {}, watch: { log } });
    const vpcId = randomUUID();
    const ns = vpcNamespace(vpcId);
    const [up, starting] = [randomUUID(), randomUUID()];
    try {
      seedCnpg(ns, up, 'Cluster in healthy state');
      seedCnpg(ns, starting, 'Setting up primary');
      const seen = await until(
        () => adapter.observe(vpcId, [up, starting, randomUUID()]),
        (m) => m.get(up)?.phase === 'ready' && m.get(starting)?.phase === 'starting',
      );
      expect([...seen.values()].map((o) => o.phase)).toEqual(['ready', 'starting', 'absent']);
      // Once the copies are complete (MOCO's empty, since its kind is not served), no list.
      await noListsOnceSynced(
        () => operatorLists(ns),
        () => adapter.observe(vpcId, [up, starting]),
      );

      // The operator reports the second cluster healthy: the copy follows.
      fake.objects.delete(`${CNPG}/Cluster/${ns}/db-${starting.slice(0, 8)}`);
      seedCnpg(ns, starting, 'Cluster in healthy state');
      await until(
        () => adapter.observe(vpcId, [starting]),
        (m) => m.get(starting)?.phase === 'ready',
      );

      await unavailableOnceGone(() => adapter.observe(vpcId, [up]));
    } finally {
      await adapter.close();
    }
  });
});
