// The built-in kubernetes mode with its watched copies of StatefulSets and pods (kit's
// WatchCache), against the in-process fake serving watches: a VPC's observation from memory
// with no list, the copies following a change, and live lists once the API server is gone.
// The same adapter runs through the watch on the real cluster in kubernetes-real-builtin.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, UnavailableError, vpcNamespace } from '@pier/kit';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { FakeKubernetes, until } from '@pier/testing';
import { BuiltinKubernetesCluster } from '../src/cluster/kubernetes-builtin.ts';
import { LABELS } from '../src/cluster/kubernetes-meta.ts';

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
      await until(
        async () => {
          const before = lists(ns);
          await adapter.observe(vpcId, [up, down]);
          return lists(ns) - before;
        },
        (listed) => listed === 0,
      );
      const before = lists(ns);
      for (let i = 0; i < 10; i++) await adapter.observe(vpcId, [up, down]);
      expect(lists(ns), 'no list while both watches are connected').toBe(before);

      // The failing primary comes up: the copy follows.
      fake.objects.delete(`v1/Pod/${ns}/db-${down.slice(0, 8)}-0`);
      seedPrimary(ns, down, true);
      await until(
        () => adapter.observe(vpcId, [down]),
        (m) => m.get(down)?.phase === 'ready',
      );

      await fake.stop();
      await expect(
        until(
          () =>
            adapter.observe(vpcId, [up]).then(
              () => 'answered',
              (err: unknown) => err,
            ),
          (r) => r instanceof UnavailableError,
          10_000,
        ),
      ).resolves.toBeInstanceOf(UnavailableError);
    } finally {
      await adapter.close();
    }
  });
});
