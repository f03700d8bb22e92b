// Two computes on one database, as the chart runs them: one takes the lead (its reconciler's
// first pass) while the other is half way through a create. That first pass settles every
// unprovisioned row it can lock as a crash's leftover; the create in flight must not be one
// of them. Before the fix, the create took its lock only after writing its
// row, and the undo acted on the row as listed once the lock came free: the service was
// created (201) and its Deployment deleted a moment later (the 10,000-service benchmark left
// 38 services crashed so).
import http from 'node:http';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, createLogger, holderId, Leases, ResourceLocks, vpcNamespace } from '@pier/kit';
import { FakeKubernetes } from '@pier/testing';
import { KnexComputeStore } from '../src/store/store.ts';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { computeReconciler } from '../src/domain/services/reconciler.ts';
import type { ComputeContext } from '../src/domain/context.ts';
import { startCompute, until, type Compute } from './support.ts';

let fake: FakeKubernetes;
let gate: http.Server;
let kubeconfig: string;
let first: Compute | undefined;
/** Deployment applies wait here while it is set. */
let held: Promise<void> | undefined;
let release = () => {};
let waiting = 0;

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  // In front of the fake: forwards everything, holding a Deployment's apply while the gate is shut.
  gate = http.createServer(async (req, res) => {
    if (held && req.method === 'PATCH' && /\/deployments\//.test(req.url ?? '')) {
      waiting++;
      await held;
    }
    const upstream = http.request(`${fake.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  gate.listen(0, '127.0.0.1');
  await once(gate, 'listening');
  kubeconfig = await fake.writeKubeconfig(`http://127.0.0.1:${(gate.address() as { port: number }).port}`);
});

afterAll(async () => {
  release();
  await first?.stop();
  gate?.close();
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

describe('a compute whose reconciler starts beside another', () => {
  it("does not undo the other's create in flight", async () => {
    first = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_COMPUTE_KUBE_WATCH: 'off' });
    held = new Promise((r) => (release = r));
    const create = first.post(first.base, { name: 'web', image: 'pier/tiny-http:1' });
    await until(
      async () => waiting,
      (n) => n > 0,
      10_000,
      20,
    );

    // The other instance's reconciler, as a pod that has just taken the lead runs it: its
    // first pass settles every unprovisioned row as a crash's, and finds this create's row.
    const db = createDb(first.db.urls.compute, 'compute', 2);
    const log = createLogger('sibling', 'warn');
    const ctx = {
      store: new KnexComputeStore(db),
      cluster: KubernetesCluster.fromKubeconfig(kubeconfig, log),
      locks: new ResourceLocks(new Leases(db, holderId('compute')), log),
      log,
      now: () => new Date(),
      eventsWritten: () => undefined,
    } as unknown as ComputeContext;
    try {
      const pass = computeReconciler(ctx, { intervalMs: 3_600_000, graceMs: 120_000, sweepEveryMs: 0 }).runOnce();
      // Given time to reach the row and wait for its lock before the create goes on.
      await new Promise((r) => setTimeout(r, 1_500));
      held = undefined;
      release();
      const res = await create;
      expect(res.status).toBe(201);
      expect((await pass).failed).toBe(0);

      const ns = vpcNamespace(first.vpcId);
      const deletes = fake.requests.filter((r) => r.method === 'DELETE' && /\/(deployments|services)\//.test(r.path));
      expect(deletes.map((r) => r.path)).toEqual([]);
      expect(fake.get('apps/v1', 'Deployment', ns, 'web'), 'the Deployment of the service created').toBeDefined();
      expect((await first.get(`${first.base}/${res.body.id}`)).body).toMatchObject({ name: 'web', status: expect.not.stringMatching(/crashed|failed/) });
    } finally {
      await db.destroy();
    }
  });
});
