// The real single-node Kubernetes that ./pier test starts (deploy/kube/cluster.sh) and
// hands to the tests as PIER_TEST_KUBECONFIG. A test file calls realKubernetes() in its
// beforeAll: without a cluster it fails and says how to get one; a test that needs pods
// calls requireNode(), which fails with the reason when only the control plane runs here
// (no root, no iptables, ...). Nothing is skipped: a missing cluster or node is a failure
// that names itself.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import path from 'node:path';
import yaml from 'js-yaml';
import { CRDS_DIR } from './kubernetes-kinds.ts';
import { freePort } from './harness.ts';
import { attachAcmeServer, attachAuthoritativeDns, type AcmeTestServer, type AuthoritativeDns } from './edge-servers.ts';

type Obj = Record<string, any>;

export interface KubeResponse {
  status: number;
  body: Obj;
  /** The API server's `Warning` headers (a deprecated field, say). */
  warnings: string[];
}

export interface RealKubernetes {
  /** The admin kubeconfig's path: what PIER_KUBECONFIG gets. */
  kubeconfig: string;
  /** Where cluster.sh's binaries are (kubectl, helm, ...): it writes the path beside the kubeconfig. */
  binDir: string;
  /** null when a node runs pods here; otherwise why not. */
  nodeMissing: string | null;
  /** Throws, naming the reason, unless a node runs pods here. */
  requireNode(): void;
  /** The apps domain of the ingress controller's default certificate (PIER_APPS_DOMAIN of `cluster.sh env`). */
  appsDomain: string;
  /** The CA that signed that certificate (PIER_EDGE_CA_FILE of `cluster.sh env`): a PEM file. */
  appsCaFile: string;
  /** The ingress controller's HTTPS address (`host:port`, PIER_KUBE_INGRESS_ADDR of `cluster.sh env`); throws when it does not run. */
  ingressAddress(): { host: string; port: number };
  /** The ingress controller's Prometheus metrics (PIER_COMPUTE_INGRESS_METRICS_URLS of `cluster.sh env`); throws when it does not serve them. */
  ingressMetricsUrl(): string;
  /** A client's GET of `urlPath` (`/`): to the ingress controller over HTTPS, for `host` (SNI and Host); its certificate is not checked. */
  viaIngress(
    host: string,
    headers?: Record<string, string>,
    timeoutMs?: number,
    urlPath?: string,
  ): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>;
  /**
   * The cluster's DNS server (zone example.test: PIER_DNS_RESOLVERS of `cluster.sh env`) and
   * the ACME server behind cert-manager's ClusterIssuer `pier-acme`; throws when they do not run.
   */
  certificates(): Promise<{ dns: AuthoritativeDns; acme: AcmeTestServer }>;
  /**
   * compute's settings for builds on this cluster, as `cluster.sh env` prints them: the
   * cluster's registry (and its CA's ConfigMap), pier/buildkit, the build namespace. Throws
   * when the registry does not run.
   */
  buildSettings(): Record<string, string>;
  /** The cluster registry's address (`host:port`). */
  registry(): string;
  /** One API request as the cluster admin; the body as JSON unless `contentType` says otherwise. */
  request(method: string, apiPath: string, body?: unknown, contentType?: string): Promise<KubeResponse>;
  /** GET that must answer 200. */
  get(apiPath: string): Promise<Obj>;
  /** Items of a list, `selector` a label selector. */
  list(apiPath: string, selector?: string): Promise<Obj[]>;
  /** Applies CRD files from deploy/crds (server-side, as `kubectl apply --server-side`) and waits until each is Established. */
  installCrds(files: string[]): Promise<void>;
  /** Deletes a namespace (and all in it) without waiting. */
  deleteNamespace(name: string): Promise<void>;
  /**
   * A plain-HTTP front of the API server for an adapter under test: every write it passes
   * on carries `fieldValidation=Strict` (an unknown or duplicate field is refused, never
   * silently pruned: a 400, or a 500 for a server-side apply), and is recorded with the
   * answer it got.
   */
  strictWrites(): Promise<StrictWrites>;
  /** A copy of the kubeconfig whose API server address answers nothing (a port nobody listens on). */
  unreachableKubeconfig(): Promise<string>;
  /** SIGKILLs a container on the node, behind the API server's back (`containerID` as a pod's status gives it). */
  killContainer(containerID: string): Promise<void>;
}

export interface StrictWrites {
  kubeconfig: string;
  writes: { method: string; path: string; status: number; body: Obj }[];
  stop(): Promise<void>;
}

const HOW =
  'no real Kubernetes cluster for this test: ./pier test starts one; by hand, `deploy/kube/cluster.sh start` then ' +
  '`export PIER_TEST_KUBECONFIG=/tmp/pier-kube/kubeconfig` (deploy/kube/README.md)';

/**
 * Where `stored` lacks or changed what was `sent`: [] when every field sent is there. The
 * API server adds its defaults, which is fine; a field it pruned or rewrote is not.
 */
export function notStoredAsSent(sent: unknown, stored: unknown, at = ''): string[] {
  if (Array.isArray(sent)) {
    if (!Array.isArray(stored) || stored.length !== sent.length) return [at || '.'];
    return sent.flatMap((v, i) => notStoredAsSent(v, stored[i], `${at}[${i}]`));
  }
  if (sent && typeof sent === 'object') {
    if (!stored || typeof stored !== 'object') return [at || '.'];
    return Object.entries(sent).flatMap(([key, v]) => notStoredAsSent(v, (stored as Obj)[key], `${at}.${key}`));
  }
  return sent === stored || sameQuantity(sent, stored) ? [] : [at || '.'];
}

const QUANTITY = /^(\d+)(Ki|Mi|Gi|Ti)$/;
const BINARY_POWER = { Ki: 1, Mi: 2, Gi: 3, Ti: 4 } as const;

/** The API server writes a quantity in its canonical form (`2048Mi` is stored as `2Gi`): the same amount. */
function sameQuantity(a: unknown, b: unknown): boolean {
  const bytes = (v: unknown) => {
    const m = typeof v === 'string' ? QUANTITY.exec(v) : null;
    return m ? BigInt(m[1]!) * 1024n ** BigInt(BINARY_POWER[m[2] as keyof typeof BINARY_POWER]) : null;
  };
  const x = bytes(a);
  return x !== null && x === bytes(b);
}

export function realKubernetes(): RealKubernetes {
  const kubeconfig = process.env.PIER_TEST_KUBECONFIG;
  if (!kubeconfig) throw new Error(HOW);
  if (!existsSync(kubeconfig)) throw new Error(`PIER_TEST_KUBECONFIG=${kubeconfig} does not exist: is the cluster running? ${HOW}`);
  const config = yaml.load(readFileSync(kubeconfig, 'utf8')) as Obj;
  const ctx = config.contexts.find((c: Obj) => c.name === config['current-context']).context;
  const cluster = config.clusters.find((c: Obj) => c.name === ctx.cluster).cluster;
  const user = config.users.find((u: Obj) => u.name === ctx.user).user;
  const server = new URL(cluster.server);
  const ca = readFileSync(cluster['certificate-authority']);
  // cluster.sh writes why there is no node beside the kubeconfig ("ready" when there is one).
  const nodeFile = path.join(path.dirname(kubeconfig), 'node');
  const node = process.env.PIER_TEST_KUBE_NODE ?? (existsSync(nodeFile) ? readFileSync(nodeFile, 'utf8').trim() : 'unknown (no node file)');
  const nodeMissing = node === 'ready' ? null : node;
  const binFile = path.join(path.dirname(kubeconfig), 'bin');
  const binDir = existsSync(binFile) ? readFileSync(binFile, 'utf8').trim() : '';

  const request = (method: string, apiPath: string, body?: unknown, contentType = 'application/json') =>
    new Promise<KubeResponse>((resolve, reject) => {
      const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const req = https.request(
        {
          host: server.hostname,
          port: server.port,
          path: apiPath,
          method,
          ca,
          headers: {
            authorization: `Bearer ${user.token}`,
            accept: 'application/json',
            ...(data !== undefined ? { 'content-type': contentType, 'content-length': Buffer.byteLength(data) } : {}),
          },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Obj;
            try {
              parsed = text ? JSON.parse(text) : {};
            } catch {
              parsed = { text };
            }
            const warning = res.headers.warning;
            resolve({ status: res.statusCode ?? 0, body: parsed, warnings: warning === undefined ? [] : [warning].flat() });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`kubernetes ${method} ${apiPath}: timed out`)));
      req.on('error', reject);
      if (data !== undefined) req.write(data);
      req.end();
    });

  const get = async (apiPath: string) => {
    const res = await request('GET', apiPath);
    if (res.status !== 200) throw new Error(`GET ${apiPath}: ${res.status} ${res.body.message ?? ''}`);
    return res.body;
  };

  return {
    kubeconfig,
    binDir,
    // As deploy/kube/cluster.sh makes them.
    appsDomain: 'apps.pier-kube.test',
    appsCaFile: path.join(path.dirname(kubeconfig), 'apps-ca.pem'),
    nodeMissing,
    requireNode() {
      if (nodeMissing) throw new Error(`this test needs a Kubernetes node to run pods, and there is none here: ${nodeMissing}`);
    },
    ingressAddress() {
      const file = path.join(path.dirname(kubeconfig), 'ingress');
      if (!existsSync(file))
        throw new Error(`this test needs the cluster's ingress controller, and none runs (no ${file}): ${nodeMissing ?? 'see cluster.sh logs'}`);
      const [host, port] = readFileSync(file, 'utf8').trim().split(':');
      return { host: host!, port: Number(port) };
    },
    ingressMetricsUrl() {
      const file = path.join(path.dirname(kubeconfig), 'ingress-metrics');
      if (!existsSync(file))
        throw new Error(`this test needs the ingress controller's metrics, and none are served (no ${file}): ${nodeMissing ?? 'see cluster.sh logs'}`);
      return readFileSync(file, 'utf8').trim();
    },
    registry() {
      const file = path.join(path.dirname(kubeconfig), 'registry');
      if (!existsSync(file)) throw new Error(`this test needs the cluster's registry, and none runs (no ${file}): ${nodeMissing ?? 'see cluster.sh logs'}`);
      return readFileSync(file, 'utf8').trim();
    },
    buildSettings() {
      const capabilities = readFileSync(path.join(path.dirname(kubeconfig), 'buildkit-capabilities'), 'utf8').trim();
      return {
        PIER_BUILD_REGISTRY: `${this.registry()}/pier-builds`,
        PIER_BUILD_NAMESPACE: 'pier-builds',
        PIER_BUILD_REGISTRY_CA: 'pier-registry-ca',
        PIER_BUILDKIT_IMAGE: 'pier/buildkit:1',
        PIER_BUILDKIT_ADD_CAPABILITIES: capabilities,
      };
    },
    async certificates() {
      if (!existsSync(path.join(path.dirname(kubeconfig), 'dns')))
        throw new Error(`this test needs the cluster's cert-manager, DNS and ACME servers, and none runs: ${nodeMissing ?? 'see cluster.sh logs'}`);
      return { dns: await attachAuthoritativeDns('pier-kube-dns'), acme: await attachAcmeServer('pier-kube-acme') };
    },
    viaIngress(host, headers = {}, timeoutMs = 10_000, urlPath = '/') {
      const ingress = this.ingressAddress();
      return new Promise((resolve, reject) => {
        const req = https.request(
          {
            host: ingress.host,
            port: ingress.port,
            servername: host,
            rejectUnauthorized: false,
            path: urlPath,
            headers: { ...headers, host },
            timeout: timeoutMs,
            agent: false,
          },
          (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    },
    request,
    get,
    async list(apiPath, selector) {
      return (await get(selector ? `${apiPath}?labelSelector=${encodeURIComponent(selector)}` : apiPath)).items;
    },
    async installCrds(files) {
      for (const file of files) {
        const crd = yaml.load(readFileSync(path.join(CRDS_DIR, file), 'utf8')) as Obj;
        // Server-side: client-side apply would store the whole CRD in an annotation, and
        // the poolers CRD (650 KB) is over the 256 KiB limit.
        const res = await request(
          'PATCH',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}?fieldManager=pier-tests&force=true`,
          JSON.stringify(crd),
          'application/apply-patch+yaml',
        );
        if (res.status !== 200 && res.status !== 201) throw new Error(`CRD ${file}: ${res.status} ${res.body.message ?? ''}`);
      }
      for (const file of files) {
        const name = (yaml.load(readFileSync(path.join(CRDS_DIR, file), 'utf8')) as Obj).metadata.name;
        for (let i = 0; ; i++) {
          const crd = await get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
          if (crd.status?.conditions?.some((c: Obj) => c.type === 'Established' && c.status === 'True')) break;
          if (i > 100) throw new Error(`CRD ${name} not Established after 20 s`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    async strictWrites() {
      const writes: StrictWrites['writes'] = [];
      const proxy = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const data = Buffer.concat(chunks);
          const write = req.method !== 'GET' && req.method !== 'DELETE';
          const url = new URL(req.url!, 'http://x');
          if (write) url.searchParams.set('fieldValidation', 'Strict');
          const headers = { ...req.headers, host: `${server.hostname}:${server.port}` };
          const upstream = https.request(
            { host: server.hostname, port: server.port, path: url.pathname + url.search, method: req.method, ca, headers },
            (up) => {
              const answer: Buffer[] = [];
              up.on('data', (c: Buffer) => answer.push(c));
              up.on('end', () => {
                if (write) {
                  let body: Obj;
                  try {
                    body = JSON.parse(data.toString('utf8'));
                  } catch {
                    body = { raw: data.toString('utf8') };
                  }
                  const status = up.statusCode ?? 0;
                  writes.push({
                    method: req.method!,
                    path: url.pathname,
                    status,
                    body: status < 300 ? body : { sent: body, answer: Buffer.concat(answer).toString('utf8') },
                  });
                }
                res.writeHead(up.statusCode ?? 502, up.headers);
                res.end(Buffer.concat(answer));
              });
            },
          );
          upstream.on('error', (err) => {
            res.writeHead(502);
            res.end(String(err));
          });
          upstream.end(data);
        });
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      const port = (proxy.address() as AddressInfo).port;
      // Plain HTTP to the proxy: client-node wants TLS verification off for that.
      const text = yaml.dump({
        ...config,
        clusters: [{ name: ctx.cluster, cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
      });
      const dir = await mkdtemp(path.join(os.tmpdir(), 'pier-kube-strict-'));
      const file = path.join(dir, 'kubeconfig');
      await writeFile(file, text, { mode: 0o600 });
      return {
        kubeconfig: file,
        writes,
        stop: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
      };
    },
    async unreachableKubeconfig() {
      const text = readFileSync(kubeconfig, 'utf8').replace(cluster.server, `https://127.0.0.1:${await freePort()}`);
      const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'pier-kube-away-')), 'kubeconfig');
      await writeFile(file, text, { mode: 0o600 });
      return file;
    },
    async killContainer(containerID) {
      // The node's containerd (cluster.sh runs it with its socket beside the kubeconfig).
      const socket = path.join(path.dirname(kubeconfig), 'containerd', 'containerd.sock');
      const id = containerID.replace(/^containerd:\/\//, '');
      await promisify(execFile)('ctr', ['-a', socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]);
    },
    async deleteNamespace(name) {
      const res = await request('DELETE', `/api/v1/namespaces/${name}`);
      if (res.status !== 200 && res.status !== 202 && res.status !== 404) throw new Error(`delete namespace ${name}: ${res.status} ${res.body.message ?? ''}`);
    },
  };
}
