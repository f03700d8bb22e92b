// What the fake Kubernetes API's pods lack next to a real cluster's, for a memory benchmark:
// a real pod comes with the fields its controllers and kubelet set (managed fields, a QoS
// class, node and IPs, four conditions, container ids) — some 6 kB of JSON, against the
// fake's 1.5 — and reaches Running through several updates (scheduled, initialized,
// containers ready, ready), each a MODIFIED event every pod watch parses whole. FakeKubelet
// grows each new pod of the fake in place in those steps, a step per pod every `stepMs`;
// the fake's watches send each step as a MODIFIED event. The pod's phase and readiness stay
// what the fake's controller made them, so what Pier judges is unchanged.
import { randomUUID } from 'node:crypto';
import type { FakeKubernetes } from '@pier/testing';

type Obj = Record<string, any>;

/** A managed-fields entry as the API server keeps one per field manager: a FieldsV1 tree of the fields it set. */
function managedEntry(manager: string, operation: string, fields: Obj): Obj {
  return { manager, operation, apiVersion: 'v1', time: new Date().toISOString(), fieldsType: 'FieldsV1', fieldsV1: fields };
}

const STEPS: ((pod: Obj, n: number) => void)[] = [
  // Scheduled: the scheduler's binding.
  (pod, n) => {
    pod.spec = {
      ...pod.spec,
      nodeName: `kwok-node-${n % 4}`,
      schedulerName: 'default-scheduler',
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    };
    pod.metadata.managedFields = [
      managedEntry('kube-controller-manager', 'Update', {
        'f:metadata': {
          'f:generateName': {},
          'f:labels': Object.fromEntries(Object.keys(pod.metadata.labels ?? {}).map((k) => [`f:${k}`, {}])),
          'f:ownerReferences': {},
        },
        'f:spec': {
          'f:containers': {
            [`k:{"name":"${pod.spec.containers[0]?.name}"}`]: {
              '.': {},
              'f:image': {},
              'f:imagePullPolicy': {},
              'f:name': {},
              'f:ports': {},
              'f:resources': {},
              'f:securityContext': {},
              'f:terminationMessagePath': {},
              'f:terminationMessagePolicy': {},
            },
          },
          'f:dnsPolicy': {},
          'f:enableServiceLinks': {},
          'f:restartPolicy': {},
          'f:schedulerName': {},
          'f:securityContext': {},
          'f:terminationGracePeriodSeconds': {},
        },
      }),
    ];
    pod.status = { ...pod.status, qosClass: 'Burstable' };
  },
  // Initialized, its IPs: the kubelet's first status.
  (pod, n) => {
    const ip = `10.244.${(n >> 8) & 255}.${n & 255}`;
    pod.status = { ...pod.status, hostIP: `172.18.0.${2 + (n % 4)}`, hostIPs: [{ ip: `172.18.0.${2 + (n % 4)}` }], podIP: ip, podIPs: [{ ip }] };
    pod.metadata.managedFields.push(
      managedEntry('kubelet', 'Update', {
        'f:status': {
          'f:conditions': { 'k:{"type":"ContainersReady"}': {}, 'k:{"type":"Initialized"}': {}, 'k:{"type":"Ready"}': {} },
          'f:containerStatuses': {},
          'f:hostIP': {},
          'f:hostIPs': {},
          'f:phase': {},
          'f:podIP': {},
          'f:podIPs': { '.': {}, [`k:{"ip":"${ip}"}`]: { '.': {}, 'f:ip': {} } },
          'f:startTime': {},
        },
      }),
    );
  },
  // Ready: every condition, the container's id and image id.
  (pod) => {
    const now = new Date().toISOString();
    const ready = pod.status.conditions?.find((c: Obj) => c.type === 'Ready')?.status ?? 'True';
    pod.status = {
      ...pod.status,
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: type === 'Ready' || type === 'ContainersReady' ? ready : 'True',
        lastProbeTime: null,
        lastTransitionTime: now,
      })),
      containerStatuses: (pod.status.containerStatuses ?? []).map((c: Obj) => ({
        ...c,
        containerID: `containerd://${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`,
        imageID: `docker.io/library/image@sha256:${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`,
        started: c.ready,
      })),
    };
  },
];

export class FakeKubelet {
  /** Pod uid -> steps done. */
  private readonly done = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly fake: FakeKubernetes,
    private readonly stepMs = 300,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.step(), this.stepMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private step(): void {
    let n = 0;
    for (const pod of this.fake.list('Pod')) {
      n++;
      const uid = pod.metadata.uid as string;
      const done = this.done.get(uid) ?? 0;
      if (done >= STEPS.length) continue;
      STEPS[done]!(pod, n);
      this.done.set(uid, done + 1);
    }
  }
}
