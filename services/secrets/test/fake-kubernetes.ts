import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Namespace, Secret } from 'kubernetes-models/v1';

// An in-process stand-in for the parts of the Kubernetes API the secrets adapter uses.
// Every object it receives is validated with kubernetes-models (the core schemas) plus the
// API server's own name/key/label rules that the schemas do not carry; a rejected object
// is answered 422, as the real server would, and recorded in `invalid` so tests can
// assert the adapter never sent one.

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

type Obj = Record<string, any>;

export class FakeKubernetes {
  readonly token = 'fake-token-for-tests';
  readonly namespaces = new Map<string, Obj>();
  /** `${namespace}/${name}` -> Secret as stored. */
  readonly secrets = new Map<string, Obj>();
  readonly requests: { method: string; path: string }[] = [];
  /** Every Secret body the adapter sent (create and replace), for schema checks. */
  readonly sentSecrets: Obj[] = [];
  readonly invalid: string[] = [];
  private server?: http.Server;
  private readonly tempDirs: string[] = [];
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  /** Stops listening (its port is closed from then on); kubeconfig files are removed. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    for (const dir of this.tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
  }

  /** A kubeconfig file pointing at this server, for PIER_KUBECONFIG. */
  async writeKubeconfig(server = this.url): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'pier-kubeconfig-'));
    this.tempDirs.push(dir);
    const file = path.join(dir, 'config');
    await writeFile(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        // The fake speaks plain HTTP; client-node allows that only with TLS checks off.
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

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    this.requests.push({ method: req.method ?? '', path: url.pathname });
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const status = (code: number, reason: string, message: string) =>
      send(code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, message, code });
    if (req.headers.authorization !== `Bearer ${this.token}`) return status(401, 'Unauthorized', 'Unauthorized');

    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body: Obj | undefined = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const parts = url.pathname.split('/').filter(Boolean); // api v1 namespaces {ns} secrets {name}

    if (req.method === 'POST' && url.pathname === '/api/v1/namespaces') {
      const problem = this.validateNamespace(body);
      if (problem) return status(422, 'Invalid', problem);
      const name = body!.metadata.name as string;
      if (this.namespaces.has(name)) return status(409, 'AlreadyExists', `namespaces "${name}" already exists`);
      this.namespaces.set(name, body!);
      return send(201, body);
    }
    if (req.method === 'GET' && url.pathname === '/api/v1/secrets') {
      const selector = parseSelector(url.searchParams.get('labelSelector') ?? '');
      const items = [...this.secrets.values()].filter((s) => Object.entries(selector).every(([k, v]) => s.metadata.labels?.[k] === v));
      return send(200, { kind: 'SecretList', apiVersion: 'v1', metadata: {}, items });
    }
    if (parts[0] === 'api' && parts[1] === 'v1' && parts[2] === 'namespaces' && parts[4] === 'secrets') {
      const ns = parts[3]!;
      const name = parts[5];
      const key = `${ns}/${name}`;
      if (req.method === 'POST' && !name) {
        if (!this.namespaces.has(ns)) return status(404, 'NotFound', `namespaces "${ns}" not found`);
        const problem = this.validateSecret(body, ns);
        if (problem) return status(422, 'Invalid', problem);
        const k = `${ns}/${body!.metadata.name}`;
        if (this.secrets.has(k)) return status(409, 'AlreadyExists', `secrets "${body!.metadata.name}" already exists`);
        this.secrets.set(k, body!);
        return send(201, body);
      }
      if (name && req.method === 'PUT') {
        const problem = this.validateSecret(body, ns, name);
        if (problem) return status(422, 'Invalid', problem);
        if (!this.secrets.has(key)) return status(404, 'NotFound', `secrets "${name}" not found`);
        this.secrets.set(key, body!);
        return send(200, body);
      }
      if (name && req.method === 'GET') {
        const s = this.secrets.get(key);
        return s ? send(200, s) : status(404, 'NotFound', `secrets "${name}" not found`);
      }
      if (name && req.method === 'DELETE') {
        if (!this.secrets.delete(key)) return status(404, 'NotFound', `secrets "${name}" not found`);
        return send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success', code: 200 });
      }
    }
    return status(404, 'NotFound', `the fake does not serve ${req.method} ${url.pathname}`);
  }

  private reject(problem: string): string {
    this.invalid.push(problem);
    return problem;
  }

  private validateNamespace(body: Obj | undefined): string | undefined {
    try {
      new Namespace(body as never).validate();
    } catch (err) {
      return this.reject(`Namespace: ${(err as Error).message}`);
    }
    if (body?.kind !== 'Namespace' || body.apiVersion !== 'v1') return this.reject('Namespace: wrong kind/apiVersion');
    if (!DNS1123_LABEL.test(body.metadata?.name ?? '') || body.metadata.name.length > 63) return this.reject('Namespace: bad name');
    return this.checkLabels('Namespace', body.metadata.labels);
  }

  private validateSecret(body: Obj | undefined, ns: string, pathName?: string): string | undefined {
    this.sentSecrets.push(body ?? {});
    try {
      new Secret(body as never).validate();
    } catch (err) {
      return this.reject(`Secret: ${(err as Error).message}`);
    }
    if (body?.kind !== 'Secret' || body.apiVersion !== 'v1') return this.reject('Secret: wrong kind/apiVersion');
    const name: string = body.metadata?.name ?? '';
    if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) return this.reject(`Secret: bad name ${name}`);
    if (pathName && pathName !== name) return this.reject('Secret: name does not match the path');
    if (body.metadata.namespace && body.metadata.namespace !== ns) return this.reject('Secret: namespace does not match the path');
    let size = 0;
    for (const [k, v] of Object.entries({ ...(body.data ?? {}), ...(body.stringData ?? {}) })) {
      if (!SECRET_KEY.test(k) || k.length > 253) return this.reject(`Secret: bad data key ${k}`);
      size += Buffer.byteLength(v as string);
    }
    if (size > 1024 * 1024) return this.reject('Secret: larger than 1 MiB');
    return this.checkLabels('Secret', body.metadata.labels);
  }

  private checkLabels(kind: string, labels: Record<string, string> | undefined): string | undefined {
    for (const [k, v] of Object.entries(labels ?? {})) {
      const [prefix, name] = k.includes('/') ? k.split('/', 2) : [undefined, k];
      if (prefix !== undefined && !DNS1123_SUBDOMAIN.test(prefix)) return this.reject(`${kind}: bad label prefix ${k}`);
      if (!LABEL_NAME.test(name!) || name!.length > 63) return this.reject(`${kind}: bad label name ${k}`);
      if (!LABEL_VALUE.test(v) || v.length > 63) return this.reject(`${kind}: bad label value ${k}=${v}`);
    }
    return undefined;
  }
}

function parseSelector(selector: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const term of selector.split(',').filter(Boolean)) {
    const [k, v] = term.split('=');
    out[k!] = v ?? '';
  }
  return out;
}

/** Throws unless the body is a valid core `Secret` (kubernetes-models' schema check). */
export function validateSecretManifest(body: unknown): void {
  new Secret(body as never).validate();
}
