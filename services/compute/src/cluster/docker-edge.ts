// The edge on the docker adapter: one Caddy container (pier/edge) that compute creates,
// attaches to every VPC network with a routed service, and configures through its admin
// socket (reached only through the Engine API: copy the JSON in, exec the loader). Which
// service a host goes to, Caddy asks per host of the route DNS this class runs
// (edge/route-dns.ts): the activator for an elastic service, else the service's running
// replicas by their container names on the VPC's network (Docker's DNS resolves those). So
// deploys, scaling and route changes need no configuration load; challenges and
// certificates do.
import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import { dockerStatusOf, isDockerNotFound, vpcNetwork, type Logger } from '@pier/kit';
import type { EdgeEntry, EdgePort, EdgeRoute, TlsOutcome } from '../domain/edge/edge-port.ts';
import type { AcmeIssuer } from '../edge/acme-issuer.ts';
import { activatorTargets, type ActivatorTarget } from '../edge/activator.ts';
import { RouteDns, type RouteName } from '../edge/route-dns.ts';
import { DockerEngine } from './docker-engine.ts';
import { LABEL } from './docker-labels.ts';
import { DockerReplicaNames } from './docker-replica-names.ts';
import { ACTIVATOR_HOST, APPS_CERT, CERT_DIR, LOOPBACK, NO_REPLICA, UNKNOWN_HOST, caddyConfig, type Challenge } from './caddy-config.ts';

export interface DockerEdgeOptions {
  host?: string;
  /** The edge container's name (its volume is `<name>-data`). */
  container: string;
  image: string;
  /** Host ports published for HTTP and HTTPS; 0 lets Docker pick free ones. */
  httpPort: number;
  httpsPort: number;
  bindAddress: string;
  appsDomain: string;
  /** Addresses apex records may point at; empty: the edge container's own. */
  addresses: string[];
  /** A certificate (and key), PEM, for `*.<apps domain>`; without it Caddy's internal CA makes one. */
  appsCertificate?: { certificatePem: string; keyPem: string };
  /** Null when no ACME directory is configured: custom domains then get no certificate. */
  acme: AcmeIssuer | null;
  /** The UDP port of the route DNS on the bridge's gateway; 0 lets the system pick one. */
  routeDnsPort: number;
  logger: Logger;
}

/** Caddy's refresh of a host's answer (caddy-config.ts), and time for what was sent just before to end. */
const DRAIN_MS = 750;
const DRAIN_FORGET_MS = 60_000;
const VPC_NETWORK_PREFIX = vpcNetwork('');
const CONFIG_FILE = '/run/pier-edge/config.json';
/** The ACME account's key, in the edge's volume: it outlives compute and the edge container. */
const ACCOUNT_KEY = 'acme-account.key';

function tarOf(files: { name: string; content: string; mode?: number }[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const f of files) pack.entry({ name: f.name, mode: f.mode ?? 0o644 }, f.content);
  pack.finalize();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
}

export class DockerEdge implements EdgePort {
  readonly kind = 'docker' as const;
  private readonly engine: DockerEngine;
  private routes: EdgeRoute[] = [];
  /** Every routed host (lowercase) and its route: what the route DNS answers from. */
  private hosts = new Map<string, EdgeRoute>();
  private elastic = new Map<string, ActivatorTarget>();
  private readonly replicaNames: DockerReplicaNames;
  private routeDns: { server: RouteDns; host: string; address: string } | null = null;
  /** Replicas about to stop (container ids): the route DNS no longer names them. */
  private readonly draining = new Set<string>();
  private readonly challenges = new Map<string, Challenge>();
  /** What the running container last loaded: its id and the configuration's hash. */
  private loaded: { containerId: string; hash: string } | null = null;
  /** One change at a time: a sync and a challenge must not interleave their loads. */
  private queue: Promise<unknown> = Promise.resolve();
  private rootCa?: { containerId: string; pem: string };
  /** The port the activator listens on at the bridge's gateway (elastic-wiring.ts), for elastic services; null: none. */
  activatorPort: number | null = null;

  constructor(private readonly opts: DockerEdgeOptions) {
    this.engine = new DockerEngine(opts.host, 30_000);
    this.replicaNames = new DockerReplicaNames(this.engine);
  }

  private get docker(): Docker {
    return this.engine.docker;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  sync(routes: EdgeRoute[]): Promise<void> {
    // The route DNS answers from the new table at once, whatever the container's state.
    this.routes = routes;
    const hosts = new Map<string, EdgeRoute>();
    for (const r of routes) for (const h of [r.serviceHost, ...r.customHosts]) hosts.set(h.toLowerCase(), r);
    this.hosts = hosts;
    this.elastic = activatorTargets(routes);
    return this.serial(() => this.apply());
  }

  /** The elastic service a host names, for the activator. */
  routeFor(host: string): ActivatorTarget | null {
    return this.activatorPort === null ? null : (this.elastic.get(host) ?? null);
  }

  /** What the route DNS answers: for a host, where Caddy sends its requests; for a target, its address. */
  private async lookup(name: string): Promise<RouteName | null> {
    if (name === ACTIVATOR_HOST) return this.routeDns ? { ipv4: this.routeDns.host } : null;
    if (name === LOOPBACK) return { ipv4: '127.0.0.1' };
    const address = this.replicaNames.addressOf(name);
    if (address) return { ipv4: address };
    const r = this.hosts.get(name);
    if (!r) return { srv: [UNKNOWN_HOST] };
    if (this.activatorPort !== null && this.elastic.has(name)) return { srv: [{ target: ACTIVATOR_HOST, port: this.activatorPort }] };
    const replicas = (await this.replicaNames.of(r.serviceId, r.vpcId)).filter((x) => !this.draining.has(x.containerId));
    return { srv: replicas.length ? replicas.map((x) => ({ target: x.name, port: r.port })) : [NO_REPLICA] };
  }

  /**
   * Takes replicas out of routing before they stop (docker.ts's drainer): the route DNS stops
   * naming them at once, Caddy asks again within its refresh, and requests already sent to
   * them finish meanwhile. Their stop then cuts no request short.
   */
  async drain(containerIds: string[]): Promise<void> {
    for (const id of containerIds) this.draining.add(id);
    // Removed or stopped by then: the listing no longer has them.
    setTimeout(() => containerIds.forEach((id) => this.draining.delete(id)), DRAIN_FORGET_MS).unref();
    await new Promise((r) => setTimeout(r, DRAIN_MS));
  }

  /** Starts the route DNS where the edge container reaches it (once); its address. */
  private async ensureRouteDns(): Promise<string> {
    if (this.routeDns) return this.routeDns.address;
    const host = await this.bridgeGateway();
    const server = new RouteDns({ lookup: (name) => this.lookup(name), logger: this.opts.logger });
    const port = await server.listen(host, this.opts.routeDnsPort);
    this.routeDns = { server, host, address: `${host}:${port}` };
    this.opts.logger.info({ address: this.routeDns.address }, 'edge route DNS listening');
    return this.routeDns.address;
  }

  /** Stops the route DNS (compute shutting down). */
  async close(): Promise<void> {
    await this.routeDns?.server.close();
    this.routeDns = null;
  }

  /** The host's address on Docker's default bridge, which the edge container is on: where it reaches the activator. */
  bridgeGateway(): Promise<string> {
    return defaultBridgeGateway(this.docker);
  }

  async addresses(): Promise<string[]> {
    if (this.opts.addresses.length) return this.opts.addresses;
    const info = await this.inspect();
    return Object.values(info?.NetworkSettings.Networks ?? {})
      .map((n) => n.IPAddress)
      .filter(Boolean);
  }

  async entry(): Promise<EdgeEntry | null> {
    const info = await this.inspect();
    const host = info?.NetworkSettings.Networks?.bridge?.IPAddress || Object.values(info?.NetworkSettings.Networks ?? {})[0]?.IPAddress;
    if (!info?.State.Running || !host) return null;
    if (this.opts.appsCertificate) return { host, port: 443 };
    // The internal CA's root (Caddy makes it once and keeps it in the edge's volume).
    if (this.rootCa?.containerId !== info.Id) {
      const { exitCode, output } = await this.exec(info.Id, ['cat', '/data/caddy/pki/authorities/local/root.crt']);
      if (exitCode !== 0) return null;
      this.rootCa = { containerId: info.Id, pem: output };
    }
    return { host, port: 443, caPem: this.rootCa.pem };
  }

  async certify(_route: EdgeRoute, hostname: string): Promise<TlsOutcome> {
    if (!this.opts.acme) return { status: 'failed', error: 'no ACME directory is configured (PIER_ACME_DIRECTORY_URL)' };
    let issued;
    try {
      issued = await this.opts.acme.issue(
        hostname,
        {
          present: (host, token, keyAuthorization) =>
            this.serial(async () => {
              this.challenges.set(token, { hostname: host, token, keyAuthorization });
              await this.apply();
            }),
          remove: (_host, token) =>
            this.serial(async () => {
              this.challenges.delete(token);
              await this.apply();
            }),
        },
        {
          load: async () => {
            const { Id } = await this.ensureContainer();
            const { exitCode, output } = await this.exec(Id, ['cat', `/data/${ACCOUNT_KEY}`]);
            return exitCode === 0 && output.includes('PRIVATE KEY') ? output : null;
          },
          save: async (pem) => this.put((await this.ensureContainer()).Id, '/data', [{ name: ACCOUNT_KEY, content: pem, mode: 0o600 }]),
        },
      );
    } catch (err) {
      return { status: 'failed', error: `certificate not issued: ${(err as Error).message}` };
    }
    const container = await this.ensureContainer();
    await this.put(container.Id, CERT_DIR, [
      { name: `${hostname}.crt`, content: issued.certificatePem },
      { name: `${hostname}.key`, content: issued.keyPem, mode: 0o600 },
    ]);
    return { status: 'issued', issuer: issued.issuer, expiresAt: issued.expiresAt };
  }

  async removeCertificate(_route: Pick<EdgeRoute, 'vpcId' | 'serviceName'>, hostname: string): Promise<void> {
    const info = await this.inspect();
    if (!info?.State.Running) return;
    await this.exec(info.Id, ['rm', '-f', `${CERT_DIR}/${hostname}.crt`, `${CERT_DIR}/${hostname}.key`]);
  }

  /** Brings the container to the current table: networks attached, configuration loaded. */
  private async apply(): Promise<void> {
    const routeDns = await this.ensureRouteDns();
    const container = await this.ensureContainer();
    await this.attachNetworks(container);
    const config = JSON.stringify(
      caddyConfig({
        routes: this.routes,
        challenges: [...this.challenges.values()],
        appsDomain: this.opts.appsDomain,
        appsCertificate: Boolean(this.opts.appsCertificate),
        routeDns,
      }),
    );
    const hash = createHash('sha256').update(config).digest('hex');
    if (this.loaded?.containerId === container.Id && this.loaded.hash === hash) return;
    await this.put(container.Id, '/run/pier-edge', [{ name: 'config.json', content: config }]);
    const { exitCode, output } = await this.exec(container.Id, ['pier-edge-load', CONFIG_FILE]);
    if (exitCode !== 0) throw new Error(`the edge refused its configuration: ${output.trim()}`);
    this.loaded = { containerId: container.Id, hash };
    this.opts.logger.info({ routes: this.routes.length, challenges: this.challenges.size }, 'edge configuration loaded');
  }

  private async inspect(): Promise<Docker.ContainerInspectInfo | null> {
    try {
      return await this.docker.getContainer(this.opts.container).inspect();
    } catch (err) {
      if (isDockerNotFound(err)) return null;
      return this.engine.call('edge inspect', () => Promise.reject(err));
    }
  }

  /** The settings the container was made with: a change (image, ports) means a new container. */
  private specHash(): string {
    const o = this.opts;
    return createHash('sha256')
      .update(JSON.stringify([o.image, o.httpPort, o.httpsPort, o.bindAddress, o.appsCertificate?.certificatePem ?? null, 'no-capabilities', 'route-dns']))
      .digest('hex')
      .slice(0, 16);
  }

  private async ensureContainer(): Promise<Docker.ContainerInspectInfo> {
    let info = await this.inspect();
    if (info && info.Config.Labels?.['pier.edge-spec'] !== this.specHash()) {
      this.opts.logger.info({ container: this.opts.container }, 'edge settings changed: replacing its container');
      await this.engine.removeContainer(info.Id);
      info = null;
    }
    if (!info) {
      const port = (p: number) => [{ HostIp: this.opts.bindAddress, HostPort: p === 0 ? '' : String(p) }];
      const created = await this.engine.call('edge create', () =>
        this.docker.createContainer({
          name: this.opts.container,
          Image: this.opts.image,
          Labels: { [LABEL.managed]: 'true', [LABEL.kind]: 'edge', 'pier.edge-spec': this.specHash() },
          ExposedPorts: { '80/tcp': {}, '443/tcp': {} },
          HostConfig: {
            PortBindings: { '80/tcp': port(this.opts.httpPort), '443/tcp': port(this.opts.httpsPort) },
            RestartPolicy: { Name: 'unless-stopped' },
            // Caddy asks the route DNS while it holds its SRV cache's lock, and before each new
            // connection: a compute that does not answer holds a request up for one second at
            // most, not Go's 2 × 5 s.
            DnsOptions: ['timeout:1', 'attempts:1'],
            // Caddy needs no capability: Docker lets any user of the container bind 80 and 443
            // in its own network namespace, and its files are its own. The edge sits on every
            // routed VPC's network: nothing there may find a way to more privileges in it.
            CapDrop: ['ALL'],
            SecurityOpt: ['no-new-privileges'],
            // Caddy's state (its autosaved configuration, the internal CA) and the certificates.
            Mounts: [{ Type: 'volume', Source: `${this.opts.container}-data`, Target: '/data' }],
            LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
          },
        }),
      );
      if (this.opts.appsCertificate) {
        await this.put(created.id, CERT_DIR, [
          { name: `${APPS_CERT}.crt`, content: this.opts.appsCertificate.certificatePem },
          { name: `${APPS_CERT}.key`, content: this.opts.appsCertificate.keyPem, mode: 0o600 },
        ]);
      }
      await this.engine.call('edge start', () => this.docker.getContainer(created.id).start());
      info = (await this.inspect())!;
      this.loaded = null;
      await this.waitForAdmin(info.Id);
    } else if (!info.State.Running) {
      await this.engine.call('edge start', () => this.docker.getContainer(info!.Id).start());
      await this.waitForAdmin(info.Id);
    }
    return info;
  }

  /** Caddy opens its admin socket a moment after the process starts. */
  private async waitForAdmin(id: string): Promise<void> {
    for (let i = 0; i < 50; i++) {
      const { exitCode } = await this.exec(id, ['test', '-S', '/run/pier-edge/admin.sock']);
      if (exitCode === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the edge container started, but Caddy opened no admin socket within 5 s');
  }

  /** Joins the VPC networks of routed services and leaves those with none (so a VPC's network can go). */
  private async attachNetworks(info: Docker.ContainerInspectInfo): Promise<void> {
    const attached = new Set(Object.keys(info.NetworkSettings.Networks ?? {}));
    const wanted = new Set(this.routes.map((r) => vpcNetwork(r.vpcId)));
    for (const network of wanted) {
      if (attached.has(network)) continue;
      try {
        await this.docker.getNetwork(network).connect({ Container: info.Id });
      } catch (err) {
        // A service never deployed has no network yet: its host answers 503 until it has.
        if (isDockerNotFound(err)) continue;
        if (dockerStatusOf(err) === 403 && /already exists/.test((err as Error).message ?? '')) continue;
        throw this.engineError(err, 'network connect');
      }
    }
    for (const network of attached) {
      if (!network.startsWith(VPC_NETWORK_PREFIX) || wanted.has(network)) continue;
      await this.engine.call('network disconnect', () => this.docker.getNetwork(network).disconnect({ Container: info.Id, Force: true }));
    }
  }

  private engineError(err: unknown, what: string): Promise<never> {
    return this.engine.call(what, () => Promise.reject(err));
  }

  private async put(containerId: string, dir: string, files: { name: string; content: string; mode?: number }[]): Promise<void> {
    const archive = await tarOf(files);
    await this.engine.call('edge copy', () => this.docker.getContainer(containerId).putArchive(archive, { path: dir }));
  }

  private async exec(containerId: string, cmd: string[]): Promise<{ exitCode: number; output: string }> {
    const container = this.docker.getContainer(containerId);
    const exec = await this.engine.call('edge exec', () => container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true }));
    const stream = await this.engine.call('edge exec', () => exec.start({ hijack: true, stdin: false }));
    const chunks: Buffer[] = [];
    const sink = { write: (c: Buffer) => chunks.push(c) } as unknown as NodeJS.WritableStream;
    this.docker.modem.demuxStream(stream, sink, sink);
    await new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
    });
    const { ExitCode } = await this.engine.call('edge exec', () => exec.inspect());
    return { exitCode: ExitCode ?? -1, output: Buffer.concat(chunks).toString('utf8') };
  }
}

/** The host's IPv4 address on Docker's default bridge (its gateway). */
export async function defaultBridgeGateway(docker: Docker): Promise<string> {
  const info = (await docker.getNetwork('bridge').inspect()) as { IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] } };
  const v4 = info.IPAM?.Config?.filter((c) => c.Subnet && !c.Subnet.includes(':')) ?? [];
  const gateway = v4.find((c) => c.Gateway)?.Gateway ?? firstHost(v4[0]?.Subnet);
  if (!gateway) throw new Error("Docker's default bridge network has no IPv4 gateway: the edge cannot reach the activator");
  return gateway;
}

/**
 * The first host address of an IPv4 subnet (172.17.0.0/16 -> 172.17.0.1): the address Docker
 * gives a bridge's gateway when none is configured. Debian's docker.io 20.10 here at
 * times lists the default bridge's subnet without its gateway (seen in a CI run).
 */
function firstHost(subnet: string | undefined): string | undefined {
  const m = subnet && /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(subnet);
  if (!m) return undefined;
  const base = ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0;
  const host = (base + 1) >>> 0;
  return [host >>> 24, (host >>> 16) & 255, (host >>> 8) & 255, host & 255].join('.');
}
