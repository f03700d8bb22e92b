import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Namespace, PersistentVolumeClaim, Pod, Secret, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { CronJob } from 'kubernetes-models/batch/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';

// An in-process stand-in for the Kubernetes API, as much of it as compute (and the secrets
// service's store) uses: discovery, create/replace/server-side apply/get/list/delete of
// the kinds below, label selectors, and a small controller that gives Deployments and
// CronJobs pods whose status follows what a kubelet would report. Every object received
// is validated with kubernetes-models (the Kubernetes OpenAPI schemas) plus the API
// server's name and label rules; a rejected one is answered 422 and kept in `invalid`.

type Obj = Record<string, any>;

interface KindInfo {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  validate(body: Obj): void;
}

const model = (M: new (data: never) => { validate(): void }) => (body: Obj) => new M(body as never).validate();

export const KINDS: KindInfo[] = [
  { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, validate: model(Namespace) },
  { apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespaced: true, validate: model(Pod) },
  { apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true, validate: model(Service) },
  { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', namespaced: true, validate: model(PersistentVolumeClaim) },
  { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true, validate: model(Secret) },
  { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true, validate: model(Deployment) },
  { apiVersion: 'batch/v1', kind: 'CronJob', plural: 'cronjobs', namespaced: true, validate: model(CronJob) },
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', namespaced: true, validate: model(HorizontalPodAutoscaler) },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true, validate: model(NetworkPolicy) },
];

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

export class FakeKubernetes {
  readonly token = 'fake-token-for-tests';
  /** `${apiVersion}|${kind}|${namespace}|${name}` -> object as stored. */
  readonly objects = new Map<string, Obj>();
  readonly requests: { method: string; path: string; query: string }[] = [];
  /** Every body received for create, replace or apply, in order. */
  readonly received: Obj[] = [];
  readonly invalid: string[] = [];
  /** Images whose containers crash at once (CrashLoopBackOff / a failed run). */
  readonly crashingImages = new Set<string>();
  /** Images no registry has (ErrImagePull). */
  readonly missingImages = new Set<string>();
  url = '';
  private server?: http.Server;

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  /** A kubeconfig file pointing at this server (or `server`), for PIER_KUBECONFIG. */
  async writeKubeconfig(server = this.url): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'pier-kubeconfig-'));
    const file = path.join(dir, 'config');
    await writeFile(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
        'users:',
        `- name: fake\n  user:\n    token: ${this.token}`,
        'contexts:',
        '- name: fake\n  context:\n    cluster: fake\n    user: fake',
        'current-context: fake',
        '',
      ].join('\n'),
    );
    return file;
  }

  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): Obj | undefined {
    return this.objects.get(key(apiVersion, kind, namespace, name));
  }

  list(kind: string, namespace?: string): Obj[] {
    return [...this.objects.values()].filter((o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace));
  }

  /** Runs a CronJob now, as its schedule would: a Job's pod that succeeds or fails. */
  runCronJob(namespace: string, name: string): Obj {
    const cron = this.get('batch/v1', 'CronJob', namespace, name);
    if (!cron) throw new Error(`no CronJob ${namespace}/${name}`);
    const template = cron.spec.jobTemplate.spec.template;
    return this.addPod(namespace, template, { kind: 'Job', name: `${name}-${Date.now()}` });
  }

  /** Recomputes every pod's status (after a Secret changed, say), as the kubelet would on restart. */
  refreshPods(): void {
    for (const pod of this.list('Pod')) pod.status = this.podStatus(pod.metadata.namespace, pod.spec);
  }

  // ---------- HTTP ----------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    this.requests.push({ method: req.method ?? '', path: url.pathname, query: url.search });
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const status = (code: number, reason: string, message: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, message, code });
    if (req.headers.authorization !== `Bearer ${this.token}`) return status(401, 'Unauthorized', 'Unauthorized');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Obj | undefined;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      return status(400, 'BadRequest', 'body is not JSON');
    }

    if (url.pathname === '/version') return send(200, { major: '1', minor: '30', gitVersion: 'v1.30.0-fake', platform: 'linux/amd64' });
    const parts = url.pathname.split('/').filter(Boolean);
    const [root, ...rest] = parts;
    let apiVersion: string;
    if (root === 'api' && rest[0] === 'v1') {
      apiVersion = 'v1';
      rest.shift();
    } else if (root === 'apis' && rest.length >= 2) {
      apiVersion = `${rest.shift()}/${rest.shift()}`;
    } else return status(404, 'NotFound', `the fake does not serve ${url.pathname}`);

    if (rest.length === 0 && req.method === 'GET') {
      const resources = KINDS.filter((k) => k.apiVersion === apiVersion).map((k) => ({
        name: k.plural,
        singularName: k.kind.toLowerCase(),
        namespaced: k.namespaced,
        kind: k.kind,
        verbs: ['create', 'delete', 'get', 'list', 'patch', 'update'],
      }));
      if (!resources.length) return status(404, 'NotFound', `no API group ${apiVersion}`);
      return send(200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersion, resources });
    }

    // [namespaces/{ns}/]{plural}[/{name}]  (and namespaces[/{name}] itself)
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest.splice(0, 2);
    }
    const [plural, name, ...extra] = rest;
    const info = KINDS.find((k) => k.apiVersion === apiVersion && k.plural === plural);
    if (!info || extra.length) return status(404, 'NotFound', `the fake does not serve ${req.method} ${url.pathname}`);
    const here = (n: string) => key(apiVersion, info.kind, namespace, n);

    if (req.method === 'GET' && !name) {
      const selector = parseSelector(url.searchParams.get('labelSelector') ?? '');
      const items = this.list(info.kind, namespace).filter((o) => Object.entries(selector).every(([k, v]) => o.metadata.labels?.[k] === v));
      return send(200, { kind: `${info.kind}List`, apiVersion, metadata: { resourceVersion: '1' }, items });
    }
    if (req.method === 'GET') {
      const o = this.objects.get(here(name!));
      return o ? send(200, o) : status(404, 'NotFound', `${plural} "${name}" not found`);
    }
    if (req.method === 'DELETE') {
      const o = this.objects.get(here(name!));
      if (!o) return status(404, 'NotFound', `${plural} "${name}" not found`);
      this.remove(o);
      return send(200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 200 });
    }
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return status(405, 'MethodNotAllowed', `${req.method}`);

    this.received.push(body ?? {});
    const problem = this.validate(info, body, namespace, name);
    if (problem) return status(422, 'Invalid', problem);
    if (info.namespaced && !this.objects.has(key('v1', 'Namespace', undefined, namespace!))) {
      return status(404, 'NotFound', `namespaces "${namespace}" not found`);
    }
    const objName = body!.metadata.name as string;
    const existing = this.objects.get(here(objName));
    if (req.method === 'POST') {
      if (name) return status(405, 'MethodNotAllowed', 'POST to an item');
      if (existing) return status(409, 'AlreadyExists', `${plural} "${objName}" already exists`);
      return send(201, this.store(info, body!, namespace, undefined));
    }
    if (req.method === 'PUT') {
      if (!existing) return status(404, 'NotFound', `${plural} "${objName}" not found`);
      return send(200, this.store(info, body!, namespace, existing));
    }
    // PATCH: server-side apply only (what compute uses).
    if (req.headers['content-type'] !== 'application/apply-patch+yaml') return status(415, 'UnsupportedMediaType', `${req.headers['content-type']}`);
    if (!url.searchParams.get('fieldManager')) return status(422, 'Invalid', 'fieldManager is required for apply patch');
    return send(existing ? 200 : 201, this.store(info, body!, namespace, existing));
  }

  private validate(info: KindInfo, body: Obj | undefined, namespace: string | undefined, pathName: string | undefined): string | undefined {
    const reject = (m: string) => {
      this.invalid.push(`${info.kind}: ${m}`);
      return `${info.kind}: ${m}`;
    };
    if (!body) return reject('no body');
    if (body.kind !== info.kind || body.apiVersion !== info.apiVersion) return reject(`body is ${body.apiVersion}/${body.kind}, the path ${info.apiVersion}/${info.kind}`);
    try {
      info.validate(body);
    } catch (err) {
      return reject((err as Error).message);
    }
    const name: string = body.metadata?.name ?? '';
    const nameRule = info.kind === 'Secret' ? DNS1123_SUBDOMAIN : DNS1123_LABEL;
    if (!nameRule.test(name) || name.length > 63) return reject(`bad name "${name}"`);
    if (pathName && pathName !== name) return reject('name does not match the path');
    if (info.namespaced && body.metadata.namespace && body.metadata.namespace !== namespace) return reject('namespace does not match the path');
    for (const labels of labelSets(body)) {
      for (const [k, v] of Object.entries(labels ?? {})) {
        const [prefix, n] = k.includes('/') ? k.split('/', 2) : [undefined, k];
        if (prefix !== undefined && !DNS1123_SUBDOMAIN.test(prefix)) return reject(`bad label prefix ${k}`);
        if (!LABEL_NAME.test(n!) || n!.length > 63) return reject(`bad label name ${k}`);
        if (typeof v !== 'string' || !LABEL_VALUE.test(v) || v.length > 63) return reject(`bad label value ${k}=${v}`);
      }
    }
    for (const c of containersOf(body)) {
      for (const e of c.env ?? []) if (!ENV_NAME.test(e.name)) return reject(`bad env name ${e.name}`);
    }
    if (info.kind === 'Deployment') {
      const selector = body.spec.selector?.matchLabels ?? {};
      const labels = body.spec.template?.metadata?.labels ?? {};
      if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) return reject('selector does not match template labels');
    }
    return undefined;
  }

  private store(info: KindInfo, body: Obj, namespace: string | undefined, existing: Obj | undefined): Obj {
    const meta = body.metadata;
    const specChanged = JSON.stringify(existing?.spec) !== JSON.stringify(body.spec);
    const obj: Obj = {
      ...body,
      metadata: {
        ...meta,
        ...(info.namespaced ? { namespace } : {}),
        uid: existing?.metadata.uid ?? randomUUID(),
        resourceVersion: String(Date.now()),
        generation: (existing?.metadata.generation ?? 0) + (specChanged || !existing ? 1 : 0),
        creationTimestamp: existing?.metadata.creationTimestamp ?? new Date().toISOString(),
      },
      ...(existing?.status ? { status: existing.status } : {}),
    };
    this.objects.set(key(info.apiVersion, info.kind, namespace, meta.name), obj);
    if (info.kind === 'Deployment' || info.kind === 'HorizontalPodAutoscaler') this.reconcileDeployments(namespace!);
    return obj;
  }

  private remove(o: Obj): void {
    const ns = o.metadata.namespace;
    this.objects.delete(key(o.apiVersion, o.kind, ns, o.metadata.name));
    // Background cascade, as the garbage collector does.
    const owned = (p: Obj) => p.metadata.ownerReferences?.some((r: Obj) => r.name === o.metadata.name || r.name.startsWith(`${o.metadata.name}-`));
    if (o.kind === 'Namespace') for (const x of [...this.objects.values()].filter((x) => x.metadata.namespace === o.metadata.name)) this.remove(x);
    if (o.kind === 'Deployment' || o.kind === 'CronJob') for (const p of this.list('Pod', ns).filter(owned)) this.remove(p);
    if (o.kind === 'HorizontalPodAutoscaler') this.reconcileDeployments(ns);
  }

  /** The ReplicaSet controller in one loop: the wanted count of pods from each Deployment's current template. */
  private reconcileDeployments(namespace: string): void {
    for (const d of this.list('Deployment', namespace)) {
      const hpa = this.list('HorizontalPodAutoscaler', namespace).find((h) => h.spec.scaleTargetRef.name === d.metadata.name);
      const wanted: number = d.spec.replicas ?? hpa?.spec.minReplicas ?? 1;
      const template = d.spec.template;
      const revision = JSON.stringify(template);
      const pods = this.list('Pod', namespace).filter((p) => p.metadata.ownerReferences?.[0]?.name === d.metadata.name);
      for (const p of pods.filter((p) => p.metadata.annotations?.['fake/revision'] !== revision)) this.remove(p);
      const current = pods.filter((p) => p.metadata.annotations?.['fake/revision'] === revision);
      for (const p of current.slice(wanted)) this.remove(p);
      for (let i = current.length; i < wanted; i++) this.addPod(namespace, template, { kind: 'ReplicaSet', name: d.metadata.name }, revision);
    }
  }

  private addPod(namespace: string, template: Obj, owner: { kind: string; name: string }, revision = ''): Obj {
    const name = `${owner.name}-${randomUUID().slice(0, 5)}`;
    const pod: Obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        uid: randomUUID(),
        labels: { ...(template.metadata?.labels ?? {}) },
        annotations: { ...(template.metadata?.annotations ?? {}), 'fake/revision': revision },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: randomUUID() }],
        creationTimestamp: new Date().toISOString(),
      },
      spec: template.spec,
    };
    pod.status = this.podStatus(namespace, pod.spec);
    this.objects.set(key('v1', 'Pod', namespace, name), pod);
    return pod;
  }

  /** What the kubelet would report for this pod spec, given the images and Secrets there are. */
  private podStatus(namespace: string, spec: Obj): Obj {
    const once = spec.restartPolicy === 'Never';
    const startedAt = new Date(Date.now() - 60_000).toISOString();
    const waiting = (c: Obj, reason: string, message: string) => ({
      phase: 'Pending',
      conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [{ name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } }],
    });
    for (const c of spec.containers as Obj[]) {
      if (this.missingImages.has(c.image)) return waiting(c, 'ErrImagePull', `failed to pull image "${c.image}": not found`);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (!ref) continue;
        const secret = this.get('v1', 'Secret', namespace, ref.name);
        if (!secret) return waiting(c, 'CreateContainerConfigError', `secret "${ref.name}" not found`);
        if (!(ref.key in (secret.data ?? {})) && !(ref.key in (secret.stringData ?? {}))) {
          return waiting(c, 'CreateContainerConfigError', `couldn't find key ${ref.key} in Secret ${namespace}/${ref.name}`);
        }
      }
      if (this.crashingImages.has(c.image)) {
        if (once) {
          return {
            phase: 'Failed',
            containerStatuses: [{ name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, reason: 'Error' } } }],
          };
        }
        return waiting(c, 'CrashLoopBackOff', 'back-off 10s restarting failed container');
      }
    }
    const c = spec.containers[0];
    if (once) {
      return { phase: 'Succeeded', containerStatuses: [{ name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] };
    }
    return {
      phase: 'Running',
      startTime: startedAt,
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [{ name: c.name, image: c.image, imageID: '', ready: true, restartCount: 0, state: { running: { startedAt } } }],
    };
  }
}

function key(apiVersion: string, kind: string, namespace: string | undefined, name: string): string {
  return `${apiVersion}|${kind}|${namespace ?? ''}|${name}`;
}

function parseSelector(selector: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const term of selector.split(',').filter(Boolean)) {
    const [k, v] = term.split('=');
    out[k!] = v ?? '';
  }
  return out;
}

function labelSets(body: Obj): (Record<string, string> | undefined)[] {
  return [body.metadata?.labels, body.spec?.template?.metadata?.labels, body.spec?.jobTemplate?.metadata?.labels, body.spec?.jobTemplate?.spec?.template?.metadata?.labels];
}

function containersOf(body: Obj): Obj[] {
  const spec = body.spec?.template?.spec ?? body.spec?.jobTemplate?.spec?.template?.spec ?? (body.kind === 'Pod' ? body.spec : undefined);
  return spec?.containers ?? [];
}
