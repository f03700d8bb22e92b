// Service logs on Kubernetes, against the in-process fake of the API (its pod log
// subresource, with timestamp prefixes and follow): the adapter alone, then compute on it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createLogger, IDENTITY_HEADER, resourcesOf, vpcNamespace } from '@pier/kit';
import { FakeKubernetes, readEventStream } from '@pier/testing';
import { KubernetesCluster } from '../src/cluster/kubernetes.ts';
import { KubernetesLogSource } from '../src/cluster/kubernetes-logs.ts';
import { kubeConfigFrom } from '@pier/kit/kubernetes';
import { configFromCreate } from '../src/domain/services/service-config.ts';
import type { LogLine } from '../src/domain/logs/log-port.ts';
import type { WorkloadSpec } from '../src/domain/cluster-port.ts';
import { startCompute, until, type Compute } from './support.ts';

const log = createLogger('test', 'warn');
let fake: FakeKubernetes;
let kubeconfig: string;

beforeAll(async () => {
  fake = await new FakeKubernetes().start();
  kubeconfig = await fake.writeKubeconfig();
});

afterAll(async () => {
  await fake?.stop();
  if (kubeconfig) await rm(path.dirname(kubeconfig), { recursive: true, force: true });
});

const podsOf = (ns: string, serviceId: string) =>
  fake
    .list('Pod', ns)
    .filter((p) => p.metadata.labels['pier.dev/service'] === serviceId)
    .map((p) => p.metadata.name as string)
    .sort();

describe('kubernetes log source', () => {
  const workspaceId = randomUUID();
  const vpcId = randomUUID();
  const ns = vpcNamespace(vpcId);
  let source: KubernetesLogSource;
  let spec: WorkloadSpec;
  let pods: string[];

  beforeAll(async () => {
    source = new KubernetesLogSource(kubeConfigFrom(kubeconfig));
    const config = configFromCreate({ name: 'printer', service_type: 'worker', min_replicas: 2 });
    spec = {
      workspaceId,
      vpcId,
      serviceId: randomUUID(),
      serviceName: 'printer',
      deploymentId: randomUUID(),
      image: 'registry.example/printer:1',
      config,
      resources: resourcesOf(config.instance_type),
      env: [],
    };
    await new KubernetesCluster(kubeConfigFrom(kubeconfig), log).apply(spec);
    pods = podsOf(ns, spec.serviceId);
    expect(pods).toHaveLength(2);
    fake.podLogs.write(ns, pods[0]!, 'a0', 'a1', 'a2');
    fake.podLogs.write(ns, pods[1]!, 'b0', 'b1');
  });

  it("lists the service's pods, running, by compute's selector", async () => {
    const replicas = await source.serviceReplicas(spec);
    expect(replicas.map((r) => r.replica).sort()).toEqual(pods);
    expect(replicas.every((r) => r.running && r.serviceId === spec.serviceId && r.deploymentId === spec.deploymentId)).toBe(true);
    expect(replicas.map((r) => r.key).sort()).toEqual(pods.map((p) => `${ns}/${p}`));
    expect((await source.replicas()).filter((r) => r.serviceId === spec.serviceId)).toHaveLength(2);
    const listed = fake.requests.filter((r) => r.path === `/api/v1/namespaces/${ns}/pods`);
    expect(decodeURIComponent(listed[listed.length - 1]!.query)).toContain(`pier.dev/service=${spec.serviceId}`);
  });

  it('reads the last lines of a pod with their timestamps, and since', async () => {
    const [a] = (await source.serviceReplicas(spec)).filter((r) => r.replica === pods[0]);
    const lines = await source.recent(a!, { tail: 2 });
    expect(lines.map((l) => l.message)).toEqual(['a1', 'a2']);
    for (const l of lines) {
      expect(l).toMatchObject({ replica: pods[0], deploymentId: spec.deploymentId, stream: 'stdout' });
      expect(l.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
    }
    const request = fake.requests.filter((r) => r.path.endsWith(`/pods/${pods[0]}/log`)).pop()!;
    expect(new URLSearchParams(request.query)).toMatchObject(new URLSearchParams('?container=app&tailLines=2&timestamps=true'));
    expect(await source.recent(a!, { tail: 10, since: new Date(Date.now() + 60_000) })).toEqual([]);
  });

  it('stops following when asked to', async () => {
    const [a] = (await source.serviceReplicas(spec)).filter((r) => r.replica === pods[0]);
    const abort = new AbortController();
    const seen: string[] = [];
    for await (const batch of source.follow(a!, null, abort.signal)) {
      seen.push(...batch.map((l) => l.message));
      abort.abort();
    }
    expect(seen).toEqual(['a0', 'a1', 'a2']);
  });
  it('follows a pod: what it printed, each new line, and the end when the pod goes', async () => {
    const [b] = (await source.serviceReplicas(spec)).filter((r) => r.replica === pods[1]);
    const seen: LogLine[] = [];
    const done = (async () => {
      for await (const batch of source.follow(b!, null, new AbortController().signal)) {
        seen.push(...batch);
        if (seen.length === 2) fake.podLogs.write(ns, pods[1]!, 'b2');
        // The Deployment goes: its pods with it, and their log streams end.
        if (seen.length === 3) await new KubernetesCluster(kubeConfigFrom(kubeconfig), log).delete(spec);
      }
    })();
    await done;
    expect(seen.map((l) => l.message)).toEqual(['b0', 'b1', 'b2']);
    const request = fake.requests.filter((r) => r.path.endsWith(`/pods/${pods[1]}/log`)).pop()!;
    expect(request.query).toContain('follow=true');
  });
});

describe('compute on kubernetes', () => {
  let c: Compute;
  let svc: any;

  beforeAll(async () => {
    c = await startCompute({ PIER_CLUSTER: 'kubernetes', PIER_KUBECONFIG: kubeconfig, PIER_COMPUTE_LOG_FLUSH_MS: '100', PIER_COMPUTE_LOG_SCAN_MS: '200' });
    const res = await c.post(c.base, { name: 'printer', service_type: 'worker', image: 'registry.example/printer:1', min_replicas: 2 });
    expect(res.status).toBe(201);
    svc = res.body;
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it('answers recent lines of both pods, collects them into history, and follows new ones', async () => {
    const ns = vpcNamespace(c.vpcId);
    const pods = podsOf(ns, svc.id);
    expect(pods).toHaveLength(2);
    fake.podLogs.write(ns, pods[0]!, 'first 0', 'first 1');
    fake.podLogs.write(ns, pods[1]!, 'second 0');

    const recent = await c.get(`${c.base}/${svc.id}/logs`);
    expect(recent.status).toBe(200);
    expect(recent.body.items.map((l: any) => `${l.replica}:${l.message}`)).toEqual([`${pods[0]}:first 0`, `${pods[0]}:first 1`, `${pods[1]}:second 0`]);
    expect(recent.body.items.every((l: any) => l.deployment_id === svc.current_deployment_id && l.stream === 'stdout')).toBe(true);

    const history = await until(
      () => c.get(`${c.base}/${svc.id}/logs/history`).then((r) => r.body.items as any[]),
      (items) => items.length === 3,
    );
    expect(history.map((l) => l.message)).toEqual(['first 0', 'first 1', 'second 0']);

    const controller = new AbortController();
    const res = await fetch(`${c.url}${c.base}/${svc.id}/logs?follow=true`, {
      headers: { [IDENTITY_HEADER]: await c.token('viewer') },
      signal: controller.signal,
    });
    const live = readEventStream(res, (r) => r.events.length >= 4);
    fake.podLogs.write(ns, pods[1]!, 'second 1');
    const read = await live;
    controller.abort();
    expect(read.events.map((e) => e.data.message)).toEqual(['first 0', 'first 1', 'second 0', 'second 1']);
  });

  it('keeps history of pods a rollout replaced', async () => {
    const ns = vpcNamespace(c.vpcId);
    const before = podsOf(ns, svc.id);
    const res = await c.post(`${c.base}/${svc.id}/deploy`, { image_tag: '2' });
    expect(res.status).toBe(202);
    const after = await until(
      async () => podsOf(ns, svc.id),
      (p) => p.length === 2 && p.every((name) => !before.includes(name)),
    );
    fake.podLogs.write(ns, after[0]!, 'new 0');
    const history = await until(
      () => c.get(`${c.base}/${svc.id}/logs/history`).then((r) => r.body.items as any[]),
      (items) => items.some((l) => l.message === 'new 0'),
    );
    expect(history.map((l) => l.message)).toEqual(['first 0', 'first 1', 'second 0', 'second 1', 'new 0']);
    expect(history[4].deployment_id).toBe(res.body.deployment.id);
    expect((await c.get(`${c.base}/${svc.id}/logs`)).body.items.map((l: any) => l.message)).toEqual(['new 0']);
  });
});
