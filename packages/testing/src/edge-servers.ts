// The outside world of custom domains, for the edge tests: a real authoritative DNS server
// (BIND 9, pier/dns-test) whose records a test changes with dynamic updates, and a real ACME
// server (Let's Encrypt's Pebble, pier/acme-test) that validates HTTP-01 through that DNS.
// Both on the default bridge, reached at their container addresses, like the git server.
import type Docker from 'dockerode';
import { promises as dns } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { Agent, request } from 'node:https';
import { docker, testLabels } from './docker.ts';

export const DNS_TEST_IMAGE = 'pier/dns-test:1';
export const ACME_TEST_IMAGE = 'pier/acme-test:1';

async function run(container: Docker.Container, cmd: string[]): Promise<{ code: number; output: string }> {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  const sink = { write: (c: Buffer) => chunks.push(c) } as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  const { ExitCode } = await exec.inspect();
  return { code: ExitCode ?? -1, output: Buffer.concat(chunks).toString('utf8') };
}

async function startContainer(image: string, env: string[]): Promise<{ container: Docker.Container; ip: string }> {
  const container = await docker.createContainer({ Image: image, Env: env, Labels: testLabels() });
  await container.start();
  return { container, ip: (await container.inspect()).NetworkSettings.IPAddress };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up within ${timeoutMs} ms`);
}

export type RecordType = 'A' | 'AAAA' | 'CNAME' | 'TXT';

export interface AuthoritativeDns {
  ip: string;
  /** `ip:53`, as PIER_DNS_RESOLVERS and Pebble take it. */
  address: string;
  /** Replaces the records of one type at `name` (none: removes them). */
  set(name: string, type: RecordType, values: string[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startAuthoritativeDns(zones: string[]): Promise<AuthoritativeDns> {
  const { container, ip } = await startContainer(DNS_TEST_IMAGE, [`ZONES=${zones.join(' ')}`]);
  const resolver = new dns.Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([ip]);
  await until('the DNS server', async () => (await resolver.resolve4(`ns.${zones[0]}`)).length > 0);
  return authoritativeDns(container, ip, () => container.remove({ force: true, v: true }));
}

/** The DNS server of a pier/dns-test container that runs already (the real test cluster's): stop() leaves it running. */
export async function attachAuthoritativeDns(name: string): Promise<AuthoritativeDns> {
  const container = docker.getContainer(name);
  return authoritativeDns(container, (await container.inspect()).NetworkSettings.IPAddress, async () => undefined);
}

function authoritativeDns(container: Docker.Container, ip: string, stop: () => Promise<unknown>): AuthoritativeDns {
  return {
    ip,
    address: `${ip}:53`,
    async set(name, type, values) {
      const quote = (v: string) => (type === 'TXT' ? JSON.stringify(v) : type === 'CNAME' ? `${v}.` : v);
      const lines = [`update delete ${name}. ${type}`, ...values.map((v) => `update add ${name}. 1 ${type} ${quote(v)}`)];
      const { code, output } = await run(container, ['sh', '-c', 'printf "%s\\n" "$@" | pier-dns-update', 'sh', ...lines]);
      if (code !== 0) throw new Error(`DNS update of ${name} ${type} failed: ${output}`);
    },
    stop: async () => {
      await stop();
    },
  };
}

export interface AcmeTestServer {
  ip: string;
  /** https://<ip>:14000/dir */
  directoryUrl: string;
  /** The CA of the directory's own TLS (PIER_ACME_CA_FILE's content). */
  listenerCaPem: string;
  /** The root that signs the certificates Pebble issues (a new one per start). */
  issuingRootPem(): Promise<string>;
  stop(): Promise<void>;
}

function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: new Agent({ ca }), timeout: 2000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/**
 * Pebble resolving names through `dnsAddress` and validating HTTP-01 on `httpPort`; names in
 * `blocked` are refused by policy (an ACME failure a test can ask for).
 */
export async function startAcmeServer(dnsAddress: string, opts: { httpPort?: number; blocked?: string[] } = {}): Promise<AcmeTestServer> {
  const { container, ip } = await startContainer(ACME_TEST_IMAGE, [
    `PEBBLE_DNS=${dnsAddress}`,
    `PEBBLE_HTTP_PORT=${opts.httpPort ?? 80}`,
    `PEBBLE_BLOCKLIST=${(opts.blocked ?? []).join(' ')}`,
  ]);
  return acmeServer(container, ip, () => container.remove({ force: true, v: true }));
}

/** The ACME server of a pier/acme-test container that runs already (the real test cluster's): stop() leaves it running. */
export async function attachAcmeServer(name: string): Promise<AcmeTestServer> {
  const container = docker.getContainer(name);
  return acmeServer(container, (await container.inspect()).NetworkSettings.IPAddress, async () => undefined);
}

async function acmeServer(container: Docker.Container, ip: string, stop: () => Promise<unknown>): Promise<AcmeTestServer> {
  let listenerCaPem = '';
  await until('the ACME server', async () => {
    const cat = await run(container, ['cat', '/etc/pebble/listener.pem']);
    if (cat.code !== 0) return false;
    listenerCaPem = cat.output;
    return (await httpsGet(`https://${ip}:14000/dir`, listenerCaPem)).status === 200;
  });
  return {
    ip,
    directoryUrl: `https://${ip}:14000/dir`,
    listenerCaPem,
    async issuingRootPem() {
      const { status, body } = await httpsGet(`https://${ip}:15000/roots/0`, listenerCaPem);
      if (status !== 200) throw new Error(`Pebble's root: HTTP ${status}`);
      return body;
    },
    stop: async () => {
      await stop();
    },
  };
}

export interface TestEdge {
  /** Compute's settings for an edge of its own: a container named for this run, ports Docker picks, a route DNS port of its own. */
  env: Record<string, string>;
  /** The edge container's name. */
  name: string;
  /** The edge container's address (it runs once compute has synced a first route). */
  ip(): Promise<string>;
  /** A plain HTTP GET through the edge with `host` as the Host header: what a client whose DNS points at the edge sends. */
  get(host: string, pathname?: string): Promise<{ status: number; body: string }>;
  /** Removes the edge container and its volume (compute leaves them running, as in production). */
  remove(): Promise<void>;
}

/** An edge for one test file: its own container (so files running at once do not share one), on free ports. */
export function testEdge(appsDomain = 'apps.test'): TestEdge {
  const name = `pier-test-edge-${process.env.PIER_TEST_RUN ?? 'local'}-${Math.random().toString(16).slice(2, 8)}`;
  return {
    name,
    env: {
      PIER_EDGE: 'on',
      PIER_EDGE_CONTAINER: name,
      PIER_EDGE_HTTP_PORT: '0',
      PIER_EDGE_HTTPS_PORT: '0',
      PIER_EDGE_BIND_ADDRESS: '127.0.0.1',
      // Its own, kept across a restart of compute (as the default is), below the ephemeral range.
      PIER_EDGE_ROUTE_DNS_PORT: String(20_000 + Math.floor(Math.random() * 12_768)),
      PIER_EDGE_SYNC_INTERVAL_MS: '500',
      PIER_APPS_DOMAIN: appsDomain,
    },
    async ip() {
      return (await docker.getContainer(name).inspect()).NetworkSettings.Networks.bridge!.IPAddress;
    },
    async get(host, pathname = '/') {
      const ip = await this.ip();
      return new Promise((resolve, reject) => {
        const req = httpRequest({ host: ip, port: 80, path: pathname, headers: { host }, timeout: 10_000 }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    },
    async remove() {
      await docker
        .getContainer(name)
        .remove({ force: true })
        .catch(() => undefined);
      await docker
        .getVolume(`${name}-data`)
        .remove()
        .catch(() => undefined);
    },
  };
}
