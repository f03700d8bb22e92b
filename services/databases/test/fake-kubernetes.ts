import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import yaml from 'js-yaml';
import { Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Job } from 'kubernetes-models/batch/v1';

// An in-process stand-in for the parts of the Kubernetes REST API the databases adapter
// uses: discovery, server-side apply (PATCH application/apply-patch+yaml), get, list by
// label selector, delete. Every object it receives is validated — core kinds with
// kubernetes-models, custom resources with ajv against the operators' CRD schemas in
// ../shared/crds — and a rejected object is answered 422 and recorded in `invalid`.

type Obj = Record<string, any>;

interface Kind {
  group: string; // '' for core
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  validate(obj: Obj): void;
}

/** The CRDs sit beside the repository (../shared/crds), as on CI. */
const CRDS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../shared/crds');

/**
 * The API server prunes fields a structural schema does not declare; validating with
 * additionalProperties: false instead makes a misspelt field an error here rather than
 * a setting silently dropped there.
 */
function closeObjects(schema: Obj): Obj {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Obj = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Obj).map(([p, s]) => [p, closeObjects(s as Obj)])) : closeObjects(v as Obj);
  // ajv's `nullable` needs a `type`; untyped nodes (int-or-string) accept anything anyway.
  if (out.nullable !== undefined && out.type === undefined) delete out.nullable;
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) {
    out.additionalProperties = false;
  }
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });

function crdValidator(file: string, version: string): ValidateFunction {
  const crd = yaml.load(readFileSync(path.join(CRDS, file), 'utf8')) as Obj;
  const v = crd.spec.versions.find((x: Obj) => x.name === version);
  const schema = closeObjects(v.schema.openAPIV3Schema);
  // metadata is free-form in a CRD schema; the API server checks it (as the core kinds do).
  schema.properties.metadata = { type: 'object' };
  return ajv.compile(schema);
}

function fromCrd(file: string, version: string) {
  const validate = crdValidator(file, version);
  return (obj: Obj) => {
    if (!validate(obj)) throw new Error(ajv.errorsText(validate.errors, { separator: '; ' }));
  };
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export const KINDS: Kind[] = [
  { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, validate: (o) => new Namespace(o as never).validate() },
  { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true, validate: (o) => new Secret(o as never).validate() },
  {
    group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true,
    validate: (o) => {
      new Service(o as never).validate();
      // Service names are DNS-1035 labels (they become DNS names): a leading digit is refused.
      if (!DNS1035_LABEL.test(o.metadata.name) || o.metadata.name.length > 63) throw new Error(`invalid Service name ${o.metadata.name}`);
    },
  },
  { group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true, validate: (o) => new Job(o as never).validate() },
  { group: 'postgresql.cnpg.io', version: 'v1', kind: 'Cluster', plural: 'clusters', namespaced: true, validate: fromCrd('cloudnative-pg/postgresql.cnpg.io_clusters.yaml', 'v1') },
  { group: 'postgresql.cnpg.io', version: 'v1', kind: 'Pooler', plural: 'poolers', namespaced: true, validate: fromCrd('cloudnative-pg/postgresql.cnpg.io_poolers.yaml', 'v1') },
  { group: 'moco.cybozu.com', version: 'v1beta2', kind: 'MySQLCluster', plural: 'mysqlclusters', namespaced: true, validate: fromCrd('moco/moco.cybozu.com_mysqlclusters.yaml', 'v1beta2') },
];

const groupVersion = (k: Kind) => (k.group ? `${k.group}/${k.version}` : k.version);

export class FakeKubernetes {
  readonly token = 'fake-token';
  /** `${plural}/${namespace}/${name}` -> object as stored. */
  readonly objects = new Map<string, Obj>();
  readonly requests: { method: string; path: string; labelSelector?: string }[] = [];
  readonly invalid: string[] = [];
  /** Every object applied, in order. */
  readonly applied: Obj[] = [];
  private server?: http.Server;
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get(plural: string, namespace: string, name: string): Obj | undefined {
    return this.objects.get(`${plural}/${namespace}/${name}`);
  }

  /** Sets an object's status, as an operator would. */
  setStatus(plural: string, namespace: string, name: string, status: Obj): void {
    const obj = this.get(plural, namespace, name);
    if (!obj) throw new Error(`no ${plural} ${namespace}/${name}`);
    obj.status = status;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const labelSelector = url.searchParams.get('labelSelector') ?? undefined;
    this.requests.push({ method: req.method ?? '', path: url.pathname, labelSelector });
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const status = (code: number, reason: string, message: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code });
    if (req.headers.authorization !== `Bearer ${this.token}`) return status(401, 'Unauthorized', 'Unauthorized');

    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;

    // Discovery: /api/v1, /apis/<group>/<version>
    for (const gv of new Set(KINDS.map(groupVersion))) {
      const prefix = gv.includes('/') ? `/apis/${gv}` : `/api/${gv}`;
      if (url.pathname === prefix && req.method === 'GET') {
        return send(200, {
          kind: 'APIResourceList',
          groupVersion: gv,
          resources: KINDS.filter((k) => groupVersion(k) === gv).map((k) => ({ name: k.plural, kind: k.kind, namespaced: k.namespaced, singularName: k.kind.toLowerCase(), verbs: ['get', 'list', 'patch', 'delete', 'create'] })),
        });
      }
    }

    const m = /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return status(404, 'NotFound', `no route ${url.pathname}`);
    let [, group = '', version = 'v1', namespace, plural, name] = m;
    // /api/v1/namespaces/<name> is the Namespace itself.
    if (!group && plural === undefined) return status(404, 'NotFound', 'no route');
    if (!group && namespace && plural === undefined) [plural, name, namespace] = ['namespaces', namespace, undefined];
    const kind = KINDS.find((k) => k.group === group && k.version === version && k.plural === plural);
    if (!kind) return status(404, 'NotFound', `unknown resource ${plural}`);
    const key = (n: string) => `${plural}/${namespace ?? ''}/${n}`;

    if (req.method === 'GET' && !name) {
      // Equality selectors only (`a=b,c=d`): all the adapter uses.
      const wanted = labelSelector ? labelSelector.split(',').map((p) => p.split('=') as [string, string]) : [];
      const items = [...this.objects.entries()]
        .filter(([k]) => k.startsWith(`${plural}/${namespace ?? ''}/`))
        .map(([, o]) => o)
        .filter((o) => wanted.every(([k, v]) => o.metadata?.labels?.[k] === v));
      return send(200, { apiVersion: groupVersion(kind), kind: `${kind.kind}List`, metadata: {}, items });
    }
    if (req.method === 'GET') {
      const obj = this.objects.get(key(name!));
      return obj ? send(200, obj) : status(404, 'NotFound', `${plural} "${name}" not found`);
    }
    if (req.method === 'DELETE') {
      if (!this.objects.delete(key(name!))) return status(404, 'NotFound', `${plural} "${name}" not found`);
      return send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
    }
    if (req.method === 'PATCH') {
      if (req.headers['content-type'] !== 'application/apply-patch+yaml') return status(415, 'UnsupportedMediaType', 'only server-side apply here');
      if (url.searchParams.get('fieldManager') !== 'pier-databases') return status(422, 'Invalid', 'fieldManager is required for apply');
      if (body?.kind !== kind.kind || body?.apiVersion !== groupVersion(kind) || body?.metadata?.name !== name) {
        return status(400, 'BadRequest', 'body does not match the path');
      }
      if (kind.namespaced && body.metadata.namespace !== namespace) return status(400, 'BadRequest', 'namespace does not match the path');
      try {
        if (!DNS1123_LABEL.test(name!) || name!.length > 63) throw new Error(`invalid name ${name}`);
        kind.validate(body);
      } catch (err) {
        this.invalid.push(`${kind.kind} ${name}: ${(err as Error).message}`);
        return status(422, 'Invalid', (err as Error).message);
      }
      this.applied.push(body);
      const previous = this.objects.get(key(name!));
      const stored: Obj = { ...body, metadata: { ...body.metadata, uid: previous?.metadata?.uid ?? `uid-${this.applied.length}` } };
      if (previous?.status) stored.status = previous.status;
      if (kind.kind === 'Secret' && body.stringData) {
        // The API server stores stringData as base64 data.
        stored.data = Object.fromEntries(Object.entries(body.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
        delete stored.stringData;
      }
      this.objects.set(key(name!), stored);
      return send(previous ? 200 : 201, stored);
    }
    return status(405, 'MethodNotAllowed', `${req.method} not supported`);
  }

  /** A KubeConfig for this server (token auth, plain http). */
  kubeconfig(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      `clusters:\n- name: fake\n  cluster:\n    server: ${this.url}\n    insecure-skip-tls-verify: true`,
      `users:\n- name: fake\n  user:\n    token: ${this.token}`,
      'contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake',
      'current-context: fake',
      '',
    ].join('\n');
  }
}
