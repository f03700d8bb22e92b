import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { KINDS, type KindInfo } from './kubernetes-kinds.ts';
import { FakeExec } from './fake-kubernetes-exec.ts';
import { FakePodLogs } from './fake-kubernetes-logs.ts';
import { FakePodMetrics } from './fake-kubernetes-metrics.ts';

export { CRDS_DIR, KINDS, validateManifest, type KindInfo } from './kubernetes-kinds.ts';
export { FakeExec, V4, V5, type FakeExecSession } from './fake-kubernetes-exec.ts';
export { FakePodLogs } from './fake-kubernetes-logs.ts';
export { FakePodMetrics, type PodUsage } from './fake-kubernetes-metrics.ts';

// An in-process stand-in for the Kubernetes API, as much of it as Pier's adapters use (the
// standards allow Kubernetes, alone, to be faked): discovery, create / replace / server-side
// apply / get / list / delete of the kinds in KINDS (kubernetes-kinds.ts), equality and
// set-based label selectors, and a small controller that gives Deployments and CronJobs pods
// whose status follows what a kubelet would report (and Jobs one running pod each, ended by
// the test with finishJob). Every object received is validated as
// kubernetes-kinds.ts describes; a refused one is answered as the real server would (400/422)
// and recorded in `invalid`, so a test can assert that none was sent. The pod exec
// subresource is in fake-kubernetes-exec.ts, the pod log subresource in fake-kubernetes-logs.ts,
// metrics-server's PodMetrics in fake-kubernetes-metrics.ts.

type Obj = Record<string, any>;

/** How often a watch compares the objects it covers (FakeKubernetesOptions.watch). */
const WATCH_POLL_MS = 20;

// ---------- label selectors ----------

type Requirement = (labels: Record<string, string>) => boolean;

/** `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x,y)`, comma-separated (all must hold). */
function parseSelector(selector: string): Requirement[] {
  const terms = selector.match(/[^,(]+(\([^)]*\))?/g) ?? [];
  return terms
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t): Requirement => {
      let m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(t);
      if (m) {
        const [, key, op, list] = m;
        const values = list!.split(',').map((v) => v.trim());
        return op === 'in' ? (l) => key! in l && values.includes(l[key!]!) : (l) => !(key! in l) || !values.includes(l[key!]!);
      }
      m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(t);
      if (m) {
        const [, key, op, value] = m;
        return op === '!=' ? (l) => l[key!] !== value : (l) => l[key!] === value;
      }
      if (t.startsWith('!')) return (l) => !(t.slice(1) in l);
      return (l) => t in l;
    });
}

// ---------- the server ----------

export interface FakeKubernetesOptions {
  /**
   * Serve `?watch=true` on lists: changes (in-place ones a test makes included) are found by
   * comparing the matching objects every WATCH_POLL_MS. Without it a watch is refused with 405,
   * and the adapters read live, as they do against a server without watches.
   */
  watch?: boolean;
  /** When set, server-side applies from any other field manager are refused (422). */
  fieldManager?: string;
  /** API groups answered 404, as a server without that operator's CRDs answers (`moco.cybozu.com/v1beta2`). */
  notServed?: string[];
}

export class FakeKubernetes {
  readonly token = 'fake-token-for-tests';
  /** `${apiVersion}/${kind}/${namespace}/${name}` -> object as stored. */
  readonly objects = new Map<string, Obj>();
  readonly requests: { method: string; path: string; query: string }[] = [];
  /** Every body received for create, replace or apply, in order (refused ones included). */
  readonly received: Obj[] = [];
  /** Why each refused object was refused. */
  readonly invalid: string[] = [];
  /** Images whose containers crash at once (CrashLoopBackOff / a failed run). */
  readonly crashingImages = new Set<string>();
  /** Images no registry has (ErrImagePull). */
  readonly missingImages = new Set<string>();
  /** The pod exec subresource: its sessions, the subprotocols it accepts. */
  readonly exec = new FakeExec();
  /** The pod log subresource: `podLogs.write(namespace, pod, ...lines)` makes a pod print. */
  readonly podLogs = new FakePodLogs();
  /** metrics.k8s.io PodMetrics: `podMetrics.set(namespace, pod, {cpu, memory})` gives a pod a usage. */
  readonly podMetrics = new FakePodMetrics();
  url = '';
  private server?: http.Server;
  private readonly tempDirs: string[] = [];

  constructor(private readonly options: FakeKubernetesOptions = {}) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  /**
   * Stops listening (its port refuses connections from then on; what it holds stays readable)
   * and removes the kubeconfig files written so far.
   */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.exec.stop();
    this.podLogs.stop();
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    for (const dir of this.tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
  }

  /** A kubeconfig for this server (or `server`): token auth, plain HTTP. */
  kubeconfig(server = this.url): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      // The fake speaks plain HTTP; client-node allows that only with TLS checks off.
      `clusters:\n- name: fake\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
      `users:\n- name: fake\n  user:\n    token: ${this.token}`,
      'contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake',
      'current-context: fake',
      '',
    ].join('\n');
  }

  /**
   * `kubeconfig(server)` as a file, for PIER_KUBECONFIG. Removed by `stop()`; one written
   * after `stop()` (a kubeconfig for a port that no longer answers) is the caller's to remove.
   */
  async writeKubeconfig(server = this.url): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'pier-kubeconfig-'));
    if (this.server) this.tempDirs.push(dir);
    const file = path.join(dir, 'config');
    await writeFile(file, this.kubeconfig(server));
    return file;
  }

  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): Obj | undefined {
    return this.objects.get(key(apiVersion, kind, namespace, name));
  }

  /** Objects of `kind` (every kind if undefined), in `namespace` (every namespace if undefined). */
  list(kind?: string, namespace?: string): Obj[] {
    return [...this.objects.values()].filter((o) => (kind === undefined || o.kind === kind) && (namespace === undefined || o.metadata.namespace === namespace));
  }

  /** Stores an object as is, as if another client had made it (no validation, no controller). */
  seed(obj: Obj): void {
    this.objects.set(key(obj.apiVersion, obj.kind, obj.metadata.namespace, obj.metadata.name), obj);
  }

  /** Sets an object's status, as its operator or controller would. */
  setStatus(apiVersion: string, kind: string, namespace: string | undefined, name: string, status: Obj): void {
    const obj = this.get(apiVersion, kind, namespace, name);
    if (!obj) throw new Error(`no ${kind} ${namespace}/${name}`);
    obj.status = status;
  }

  /** Runs a CronJob now, as its schedule would: a Job's pod that succeeds or fails. */
  runCronJob(namespace: string, name: string): Obj {
    const cron = this.get('batch/v1', 'CronJob', namespace, name);
    if (!cron) throw new Error(`no CronJob ${namespace}/${name}`);
    const template = cron.spec.jobTemplate.spec.template;
    return this.addPod(namespace, template, { kind: 'Job', name: `${name}-${Date.now()}` });
  }

  /**
   * The Job controller, as far as tests need it: a Job created through the API gets one pod,
   * Running (its image started) until the test ends it with finishJob. A pod with init
   * containers stays Pending with its first init container running, as the kubelet reports it.
   */
  private startJob(namespace: string, job: Obj): void {
    const pod = this.addPod(namespace, job.spec.template, { kind: 'Job', name: job.metadata.name });
    const startedAt = new Date().toISOString();
    const status = (c: Obj, state: Obj) => ({ name: c.name, image: c.image, imageID: '', ready: !!state.running, restartCount: 0, state });
    const init = (pod.spec.initContainers ?? []) as Obj[];
    pod.status = init.length
      ? {
          phase: 'Pending',
          startTime: startedAt,
          conditions: [
            { type: 'Initialized', status: 'False' },
            { type: 'Ready', status: 'False' },
          ],
          initContainerStatuses: init.map((c, i) => ({
            ...status(c, i ? { waiting: { reason: 'PodInitializing' } } : { running: { startedAt } }),
            ready: false,
          })),
          containerStatuses: (pod.spec.containers as Obj[]).map((c) => status(c, { waiting: { reason: 'PodInitializing' } })),
        }
      : {
          phase: 'Running',
          startTime: startedAt,
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [status(pod.spec.containers[0], { running: { startedAt } })],
        };
    job.status = { active: 1, startTime: startedAt };
  }

  /**
   * Ends a Job's pod as its containers would: the Job then reads Complete, or Failed with
   * `reason`. Every container (init containers too) exits with 0 on success, 1 on failure,
   * unless `terminated` says otherwise for it: its exit code and termination message.
   */
  finishJob(
    namespace: string,
    name: string,
    outcome: 'succeeded' | 'failed',
    reason = 'BackoffLimitExceeded',
    terminated: Record<string, { exitCode?: number; reason?: string; message?: string }> = {},
  ): void {
    const job = this.get('batch/v1', 'Job', namespace, name);
    if (!job) throw new Error(`no Job ${namespace}/${name}`);
    const now = new Date().toISOString();
    for (const pod of this.list('Pod', namespace).filter((p) => p.metadata.ownerReferences?.[0]?.name === name)) {
      const status = (c: Obj) => {
        const exitCode = terminated[c.name]?.exitCode ?? (outcome === 'succeeded' ? 0 : 1);
        const message = terminated[c.name]?.message;
        return {
          name: c.name,
          image: c.image,
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode, reason: terminated[c.name]?.reason ?? (exitCode ? 'Error' : 'Completed'), ...(message ? { message } : {}) } },
        };
      };
      const init = (pod.spec.initContainers ?? []) as Obj[];
      pod.status = {
        phase: outcome === 'succeeded' ? 'Succeeded' : 'Failed',
        ...(init.length ? { initContainerStatuses: init.map(status) } : {}),
        containerStatuses: (pod.spec.containers as Obj[]).map(status),
      };
    }
    job.status =
      outcome === 'succeeded'
        ? { succeeded: 1, startTime: job.status?.startTime, completionTime: now, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: now }] }
        : {
            failed: 1,
            startTime: job.status?.startTime,
            conditions: [{ type: 'Failed', status: 'True', reason, message: `Job has reached the specified backoff limit`, lastTransitionTime: now }],
          };
  }

  /** Recomputes every pod's status (after a Secret changed, say), as the kubelet would on restart. */
  refreshPods(): void {
    for (const pod of this.list('Pod')) pod.status = this.podStatus(pod.metadata.namespace, pod.spec);
  }

  // ---------- HTTP ----------

  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    this.requests.push({ method: 'UPGRADE', path: (req.url ?? '/').split('?')[0]!, query: (req.url ?? '').split('?')[1] ?? '' });
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec(?:\?|$)/.exec(req.url ?? '');
    if (req.headers.authorization !== `Bearer ${this.token}`) return void socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n');
    if (!m) return void socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
    const [, namespace, pod] = m;
    this.exec.upgrade(req, socket, head, { namespace: namespace!, pod: pod! }, this.get('v1', 'Pod', namespace, pod!));
  }

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
    const [root, ...rest] = url.pathname.split('/').filter(Boolean);
    let apiVersion: string;
    if (root === 'api' && rest[0] === 'v1') {
      apiVersion = 'v1';
      rest.shift();
    } else if (root === 'apis' && rest.length >= 2) {
      apiVersion = `${rest.shift()}/${rest.shift()}`;
    } else return status(404, 'NotFound', `the fake does not serve ${url.pathname}`);

    if (this.options.notServed?.includes(apiVersion))
      return status(404, 'NotFound', `the server could not find the requested resource (${apiVersion} is not served)`);
    // Discovery: which kinds a group version has, and whether they are namespaced.
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
    if (apiVersion === 'v1' && plural === 'pods' && namespace && name && extra.length === 1 && extra[0] === 'log' && req.method === 'GET') {
      if (!this.get('v1', 'Pod', namespace, name)) return status(404, 'NotFound', `pods "${name}" not found`);
      return this.podLogs.serve(namespace, name, url.searchParams, res);
    }
    if (apiVersion === 'metrics.k8s.io/v1beta1' && plural === 'pods' && !name && req.method === 'GET') {
      const selector = parseSelector(url.searchParams.get('labelSelector') ?? '');
      return send(200, this.podMetrics.list(this.list('Pod', namespace).filter((o) => selector.every((matches) => matches(o.metadata.labels ?? {})))));
    }
    const info = KINDS.find((k) => k.apiVersion === apiVersion && k.plural === plural);
    if (!info || extra.length) return status(404, 'NotFound', `the fake does not serve ${req.method} ${url.pathname}`);
    const here = (n: string) => key(apiVersion, info.kind, namespace, n);

    if (req.method === 'GET' && !name && url.searchParams.get('watch') === 'true') {
      if (!this.options.watch) return status(405, 'MethodNotAllowed', 'this fake serves watches only when made with { watch: true }');
      return this.serveWatch(info.kind, namespace, parseSelector(url.searchParams.get('labelSelector') ?? ''), res);
    }
    if (req.method === 'GET' && !name) {
      const selector = parseSelector(url.searchParams.get('labelSelector') ?? '');
      const items = this.list(info.kind, namespace).filter((o) => selector.every((matches) => matches(o.metadata.labels ?? {})));
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
    const refuse = (code: number, reason: string, problem: string) => {
      this.invalid.push(`${info.kind}: ${problem}`);
      return status(code, reason, `${info.kind}: ${problem}`);
    };
    if (!body) return refuse(400, 'BadRequest', 'no body');
    if (body.kind !== info.kind || body.apiVersion !== info.apiVersion) {
      return refuse(400, 'BadRequest', `body is ${body.apiVersion}/${body.kind}, the path ${info.apiVersion}/${info.kind}`);
    }
    const objName = body.metadata?.name as string | undefined;
    if (name && name !== objName) return refuse(400, 'BadRequest', `name "${objName}" does not match the path's "${name}"`);
    if (info.namespaced && body.metadata?.namespace && body.metadata.namespace !== namespace)
      return refuse(400, 'BadRequest', 'namespace does not match the path');
    try {
      info.validate(body);
    } catch (err) {
      const problem = (err as Error).message;
      // A server-side apply naming a field the schema does not declare fails while the patch
      // is typed, which the real API server answers with a 500, not a 422.
      if (req.method === 'PATCH' && /additional propert/i.test(problem)) {
        return refuse(500, 'InternalError', `failed to create typed patch object: field not declared in schema: ${problem}`);
      }
      return refuse(422, 'Invalid', problem);
    }
    if (info.namespaced && !this.objects.has(key('v1', 'Namespace', undefined, namespace!))) {
      return status(404, 'NotFound', `namespaces "${namespace}" not found`);
    }
    const existing = this.objects.get(here(objName!));
    if (req.method === 'POST') {
      if (name) return status(405, 'MethodNotAllowed', 'POST to an item');
      if (existing) return status(409, 'AlreadyExists', `${plural} "${objName}" already exists`);
      return send(201, this.store(info, body, namespace, undefined));
    }
    if (req.method === 'PUT') {
      if (!existing) return status(404, 'NotFound', `${plural} "${objName}" not found`);
      return send(200, this.store(info, body, namespace, existing));
    }
    // PATCH: server-side apply only (what the adapters use).
    if (req.headers['content-type'] !== 'application/apply-patch+yaml') return status(415, 'UnsupportedMediaType', `${req.headers['content-type']}`);
    const manager = url.searchParams.get('fieldManager');
    if (!manager) return refuse(422, 'Invalid', 'fieldManager is required for apply patch');
    if (this.options.fieldManager && manager !== this.options.fieldManager)
      return refuse(422, 'Invalid', `applied by field manager ${manager}, not ${this.options.fieldManager}`);
    return send(existing ? 200 : 201, this.store(info, body, namespace, existing));
  }

  /**
   * A watch: every matching object as ADDED first (the list the client made may be a moment
   * old), then ADDED / MODIFIED / DELETED as the objects change, until the client goes.
   */
  private serveWatch(kind: string, namespace: string | undefined, selector: Requirement[], res: http.ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/json' });
    // Answered at once, as the API server does, whether or not an event follows.
    res.flushHeaders();
    const matching = () =>
      new Map(
        this.list(kind, namespace)
          .filter((o) => selector.every((matches) => matches(o.metadata.labels ?? {})))
          .map((o) => [o.metadata.uid ?? o.metadata.name, o]),
      );
    const known = new Map<string, string>();
    const send = (type: string, object: Obj) => res.write(`${JSON.stringify({ type, object })}\n`);
    const poll = () => {
      const now = matching();
      for (const [id, o] of now) {
        const json = JSON.stringify(o);
        const before = known.get(id);
        if (before === json) continue;
        known.set(id, json);
        send(before === undefined ? 'ADDED' : 'MODIFIED', o);
      }
      for (const [id, json] of known) {
        if (now.has(id)) continue;
        known.delete(id);
        send('DELETED', JSON.parse(json));
      }
    };
    // A poll over many objects (a benchmark's 10,000 pods) takes a while: the next one waits
    // four times as long, so the fake keeps most of its process's time to answer requests.
    let timer: NodeJS.Timeout | undefined;
    const loop = () => {
      const started = performance.now();
      poll();
      timer = setTimeout(loop, Math.max(WATCH_POLL_MS, 4 * (performance.now() - started)));
    };
    loop();
    res.on('close', () => clearTimeout(timer));
  }

  /** What the API server keeps: the object with its server-set metadata, its status kept across writes. */
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
    if (info.kind === 'Secret' && body.stringData) {
      // stringData is write-only: the API server stores it base64-encoded in data.
      const encoded = Object.entries(body.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString('base64')]);
      obj.data = { ...(body.data ?? {}), ...Object.fromEntries(encoded) };
      delete obj.stringData;
    }
    this.objects.set(key(info.apiVersion, info.kind, namespace, meta.name), obj);
    if (info.kind === 'Deployment' || info.kind === 'HorizontalPodAutoscaler') this.reconcileDeployments(namespace!);
    if (info.kind === 'Job' && !existing) this.startJob(namespace!, obj);
    return obj;
  }

  private remove(o: Obj): void {
    if (o.kind === 'Pod') this.podLogs.podGone(o.metadata.namespace, o.metadata.name);
    const ns = o.metadata.namespace;
    this.objects.delete(key(o.apiVersion, o.kind, ns, o.metadata.name));
    // Background cascade, as the garbage collector does.
    const owned = (p: Obj) => p.metadata.ownerReferences?.some((r: Obj) => r.name === o.metadata.name || r.name.startsWith(`${o.metadata.name}-`));
    if (o.kind === 'Namespace') for (const x of this.list(undefined, o.metadata.name)) this.remove(x);
    if (o.kind === 'Deployment' || o.kind === 'CronJob' || o.kind === 'Job') for (const p of this.list('Pod', ns).filter(owned)) this.remove(p);
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
            containerStatuses: [
              { name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, reason: 'Error' } } },
            ],
          };
        }
        // As a real kubelet (1.37) reports a crash loop between restarts: the pod Running,
        // its container `terminated` (not `waiting: CrashLoopBackOff`), restarted before.
        const exited = { exitCode: 1, reason: 'Error', startedAt, finishedAt: startedAt };
        return {
          phase: 'Running',
          startTime: startedAt,
          conditions: [{ type: 'Ready', status: 'False' }],
          containerStatuses: [
            { name: c.name, image: c.image, imageID: '', ready: false, restartCount: 3, state: { terminated: exited }, lastState: { terminated: exited } },
          ],
        };
      }
    }
    const c = spec.containers[0];
    if (once) {
      return {
        phase: 'Succeeded',
        containerStatuses: [
          { name: c.name, image: c.image, imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } },
        ],
      };
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
  return `${apiVersion}/${kind}/${namespace ?? ''}/${name}`;
}
