// A change in the cluster at size: one service's pod deleted (grace 0) behind Pier's back,
// then how long until Pier says so. Twice, on two services of the big VPC:
//   1. nothing reads the service: does an event come by itself (the reconciler's doing)?
//   2. its detail is read every 50 ms: when the read shows the change (status or ready
//      replicas) and when it is back as before; and the events meanwhile.
// Events are taken from NATS (pier.events.<workspace>.<vpc>.>, as @pier/testing collects them).
import type http from 'node:http';
import { vpcNamespace } from '@pier/kit';
import { collectEvents, type RealKubernetes } from '@pier/testing';
import { K8S_LABEL } from '../services/compute/src/cluster/kubernetes-manifests.ts';
import { PAGE, call, servicesPath, type Vpc } from './scale-fleet.ts';

const QUIET_MS = 30_000;

async function killPod(kube: RealKubernetes, vpc: Vpc, serviceId: string): Promise<void> {
  const ns = vpcNamespace(vpc.vpcId);
  const [pod] = await kube.list(`/api/v1/namespaces/${ns}/pods`, `${K8S_LABEL.service}=${serviceId}`);
  if (!pod) throw new Error(`no pod of service ${serviceId}`);
  const res = await kube.request('DELETE', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`, {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    gracePeriodSeconds: 0,
  });
  if (res.status !== 200) throw new Error(`delete pod: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function killedPod(opts: { kube: RealKubernetes; agent: http.Agent; computePort: number; natsUrl: string; vpcs: Vpc[] }): Promise<string[]> {
  const { kube, agent, computePort } = opts;
  const vpc = opts.vpcs[0]!;
  const page = await call(agent, computePort, vpc, 'GET', `${servicesPath(vpc)}?limit=${PAGE}`);
  const [quiet, read] = page.body.items as { id: string }[];
  if (!quiet || !read) throw new Error('the big VPC has fewer than two services');
  const events = await collectEvents(opts.natsUrl, vpc.workspaceId, vpc.vpcId);
  const lines: string[] = [];
  try {
    const eventOf = (id: string) => events.events.find((e) => e.payload.resource_id === id);
    const waitEvent = async (id: string, since: number, ms: number) => {
      while (performance.now() - since < ms) {
        const e = eventOf(id);
        if (e) return `${e.payload.kind} after ${(performance.now() - since).toFixed(0)} ms`;
        await new Promise((r) => setTimeout(r, 10));
      }
      return `none within ${(ms / 1000).toFixed(0)} s`;
    };

    // 1. Nobody reads.
    let t0 = performance.now();
    await killPod(kube, vpc, quiet.id);
    lines.push(`scale: pod killed, service not read: event: ${await waitEvent(quiet.id, t0, QUIET_MS)}`);

    // 2. Read every 50 ms (each read asks the cluster: one list of the VPC's pods).
    const detail = `${servicesPath(vpc)}/${read.id}`;
    const look = async () => {
      const r = await call(agent, computePort, vpc, 'GET', detail);
      return { status: r.body.status as string, ready: r.body.replicas.ready as number };
    };
    const before = await look();
    const event = waitEvent(read.id, (t0 = performance.now()), QUIET_MS);
    await killPod(kube, vpc, read.id);
    let seen: { ms: number; status: string; ready: number } | undefined;
    let back: number | undefined;
    while (performance.now() - t0 < QUIET_MS && back === undefined) {
      const now = await look();
      const ms = performance.now() - t0;
      const same = now.status === before.status && now.ready === before.ready;
      if (!seen && !same) seen = { ms, ...now };
      else if (seen && same) back = ms;
      if (back === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    const change = seen
      ? `read shows it after ${seen.ms.toFixed(0)} ms (status ${before.status} → ${seen.status}, ready ${before.ready} → ${seen.ready})` +
        (back !== undefined ? `, as before again after ${back.toFixed(0)} ms` : `, not as before within ${QUIET_MS / 1000} s`)
      : `no read showed it within ${QUIET_MS / 1000} s`;
    lines.push(`scale: pod killed, service read every 50 ms: ${change}; event: ${await event}`);
    return lines;
  } finally {
    await events.close();
  }
}
