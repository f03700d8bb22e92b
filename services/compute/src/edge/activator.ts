// The activator: where the edge sends the requests of elastic services (on_demand, or
// autoscaled), in the way Knative's activator stands in front of a revision. It finds the
// service by the request's Host in the edge's routing table (`route`) and trusts no header
// a client could send; in compute:
//
// - forwards to a ready replica (least requests in flight), found through the cluster's API
//   by the service's labels, so scaling needs no edge change;
// - holds a request when no replica is ready, asks the elastic controller to wake the
//   service on that very request, and forwards it once a replica accepts connections (or
//   answers its health check), adding `Server-Timing: wake;dur=<ms>`; 503 after the deadline;
// - counts requests, WebSockets and event streams in flight per service and replica, which
//   is what idleness and autoscaling are judged on (domain/elastic);
// - drains: a replica about to stop gets no new request, and its stop waits for the ones
//   in flight.
//
// On docker it listens on the address of Docker's default bridge on the host, which the
// edge container reaches (the route DNS sends an elastic service's hosts here); tenants'
// containers do not (the egress firewall keeps VPC networks off the host), and what it
// offers is no more than the public edge does anyway. On kubernetes the ingress controller
// sends an on_demand service's hosts to it, through a Service in the VPC's namespace whose
// endpoint is compute (cluster/kubernetes-edge.ts).
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '@pier/kit';
import type { EdgeRoute } from '../domain/edge/edge-port.ts';
import type { ServiceTraffic } from '../domain/elastic/elastic-port.ts';

export interface ReplicaAddress {
  id: string;
  index: number;
  address: string;
}

export interface ActivatorOptions {
  /** The running replicas of a service (docker.ts's or kubernetes.ts's replicaAddresses). */
  list(serviceId: string, vpcId: string): Promise<ReplicaAddress[]>;
  /** Who a request is for by its Host (lowercase, no port): the elastic service it names, or null. */
  route(host: string): ActivatorTarget | null;
  /** Wakes a sleeping service (the elastic controller); resolves once its replicas were started, true if it was asleep. */
  wake(serviceId: string): Promise<boolean>;
  /** How long a request may wait for a ready replica (a wake included) before a 503. */
  holdMs: number;
  /** Told of each request that waited for a wake, with how long it waited. */
  observeWake?(seconds: number): void;
  logger: Logger;
}

interface Replica extends ReplicaAddress {
  ready: boolean;
  probing: boolean;
  draining: boolean;
  inFlight: number;
}

interface ServiceState {
  vpcId: string;
  port: number;
  healthPath: string | null;
  replicas: Map<string, Replica>;
  listedAt: number;
  listing: Promise<void> | null;
  inFlight: number;
  peak: number;
  lastActiveAt: number;
  /** While a scale-down or sleep is in progress: replicas from this index up get nothing new. */
  keep: number;
  /** The wake asked for by the first request that found no replica; the others wait on it. */
  waking: Promise<boolean> | null;
}

export interface ActivatorTarget {
  serviceId: string;
  vpcId: string;
  port: number;
  healthPath: string | null;
}

/** The hosts (lowercase) of the routes that go through the activator, and who each is for: what `route` answers from. */
export function activatorTargets(routes: EdgeRoute[]): Map<string, ActivatorTarget> {
  const hosts = new Map<string, ActivatorTarget>();
  for (const r of routes) {
    if (!r.activator) continue;
    const target = { serviceId: r.serviceId, vpcId: r.vpcId, port: r.port, healthPath: r.activator.healthPath };
    for (const h of [r.serviceHost, ...r.customHosts]) hosts.set(h.toLowerCase(), target);
  }
  return hosts;
}

/** A listing this fresh is used as it is; a waiting request lists again sooner. */
const LIST_TTL_MS = 1_000;
const HOLD_LIST_MS = 50;
const PROBE_EVERY_MS = 10;
const DRAIN_DEADLINE_MS = 30_000;
/** How long a request that found its replica waits to learn whether its wait was a wake. */
const WAKE_SETTLE_MS = 1_000;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Activator {
  private readonly server: http.Server;
  private readonly services = new Map<string, ServiceState>();
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  /** Upgraded connections (WebSockets): the HTTP server no longer tracks them. */
  private readonly tunnels = new Set<Duplex>();

  constructor(private readonly opts: ActivatorOptions) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.upgrade(req, socket, head));
    // Longer than the edge keeps an idle connection to us (caddy-config.ts): the edge, not
    // the activator, closes it, so the edge never sends on a connection closed under it.
    this.server.keepAliveTimeout = 120_000;
  }

  async listen(host: string, port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    return (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    for (const t of this.tunnels) t.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.agent.destroy();
  }

  traffic(serviceId: string): ServiceTraffic {
    const s = this.services.get(serviceId);
    if (!s) return { inFlight: 0, peak: 0, lastActiveAt: 0 };
    const peak = Math.max(s.peak, s.inFlight);
    s.peak = s.inFlight;
    return { inFlight: s.inFlight, peak, lastActiveAt: s.lastActiveAt };
  }

  async drain(serviceId: string, keep: number): Promise<void> {
    const s = this.services.get(serviceId);
    if (!s) return;
    s.keep = keep;
    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    const busy = () => [...s.replicas.values()].some((r) => r.index >= keep && r.inFlight > 0);
    while (busy() && Date.now() < deadline) await sleep(20);
  }

  /** The cluster finished a scale: the drained replicas have stopped (the listing, read afresh, no longer has them). */
  scaled(serviceId: string): void {
    const s = this.services.get(serviceId);
    if (!s) return;
    s.keep = Infinity;
    s.listedAt = 0;
  }

  private targetOf(req: http.IncomingMessage): ActivatorTarget | null {
    // The Host as sent, without a port, case-insensitive (as the edge matched it).
    const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '');
    return host ? this.opts.route(host) : null;
  }

  private stateOf(t: ActivatorTarget): ServiceState {
    let s = this.services.get(t.serviceId);
    if (!s) {
      s = {
        vpcId: t.vpcId,
        port: t.port,
        healthPath: t.healthPath,
        replicas: new Map(),
        listedAt: 0,
        listing: null,
        inFlight: 0,
        peak: 0,
        lastActiveAt: 0,
        keep: Infinity,
        waking: null,
      };
      this.services.set(t.serviceId, s);
    }
    // A PATCH of the port or health check reaches the edge's route first.
    if (s.port !== t.port || s.healthPath !== t.healthPath) {
      s.port = t.port;
      s.healthPath = t.healthPath;
      for (const r of s.replicas.values()) r.ready = false;
    }
    return s;
  }

  /** Re-reads the running replicas when the listing is older than `maxAgeMs`; new ones are probed. */
  private async refresh(serviceId: string, s: ServiceState, maxAgeMs: number): Promise<void> {
    if (Date.now() - s.listedAt < maxAgeMs) return;
    s.listing ??= (async () => {
      try {
        const found = await this.opts.list(serviceId, s.vpcId);
        const next = new Map<string, Replica>();
        for (const f of found) {
          const known = s.replicas.get(f.id);
          // A kept replica takes its index from this listing: on kubernetes the order of pods
          // shifts as pods come and go, and a scale-down drains the ones the cluster will stop.
          if (known && known.address === f.address) next.set(f.id, Object.assign(known, { index: f.index }));
          else next.set(f.id, { ...f, ready: false, probing: false, draining: false, inFlight: 0 });
        }
        s.replicas = next;
        s.listedAt = Date.now();
      } finally {
        s.listing = null;
      }
    })();
    await s.listing;
    for (const r of s.replicas.values()) if (!r.ready) this.probe(s, r);
  }

  private probe(s: ServiceState, r: Replica): void {
    if (r.probing) return;
    r.probing = true;
    const done = (ok: boolean) => {
      r.probing = false;
      if (ok) r.ready = true;
    };
    if (s.healthPath) {
      const req = http.get({ host: r.address, port: s.port, path: s.healthPath, timeout: 1000, agent: false }, (res) => {
        res.resume();
        done((res.statusCode ?? 500) < 400);
      });
      req.on('error', () => done(false));
      req.on('timeout', () => req.destroy());
    } else {
      const socket = net.connect({ host: r.address, port: s.port });
      socket.setTimeout(1000);
      socket.once('connect', () => (socket.destroy(), done(true)));
      socket.once('error', () => done(false));
      socket.once('timeout', () => (socket.destroy(), done(false)));
    }
  }

  private pick(s: ServiceState): Replica | undefined {
    let best: Replica | undefined;
    for (const r of s.replicas.values()) {
      if (!r.ready || r.index >= s.keep) continue;
      if (!best || r.inFlight < best.inFlight) best = r;
    }
    return best;
  }

  /** A ready replica, waking the service and waiting for one when there is none; null after the deadline. */
  private async replicaFor(serviceId: string, s: ServiceState): Promise<{ replica: Replica; waitedMs: number | null } | null> {
    await this.refresh(serviceId, s, LIST_TTL_MS);
    let replica = this.pick(s);
    if (replica) return { replica, waitedMs: null };
    const started = Date.now();
    const deadline = started + this.opts.holdMs;
    // Asked on this very request, once however many requests wait.
    let wakeFailed = false;
    const waking = (s.waking ??= this.opts
      .wake(serviceId)
      .then(
        (asleep) => {
          s.listedAt = 0;
          return asleep;
        },
        (err: unknown) => {
          this.opts.logger.warn({ service: serviceId, err: String(err) }, 'activator: the wake failed');
          throw err;
        },
      )
      .finally(() => (s.waking = null)));
    waking.catch(() => (wakeFailed = true));
    let lastProbe = 0;
    while (Date.now() < deadline && !wakeFailed) {
      await this.refresh(serviceId, s, HOLD_LIST_MS).catch(() => undefined);
      replica = this.pick(s);
      if (replica) break;
      if (Date.now() - lastProbe >= PROBE_EVERY_MS) {
        lastProbe = Date.now();
        for (const r of s.replicas.values()) if (!r.ready) this.probe(s, r);
      }
      await sleep(PROBE_EVERY_MS);
    }
    if (!replica) return null;
    const waitedMs = Date.now() - started;
    // Only a wait for a wake is one (Server-Timing, the cold-start histogram); a replica
    // briefly not ready (a rollout, a restart) is not. A wake resolves once its count is
    // recorded, which may be a few ms after its replica answers a probe; one that has not
    // resolved within a second is waiting on another holder of the service's lock (a
    // rollout), which leaves the service awake and the wake with nothing to do.
    const woke = await Promise.race([waking.catch(() => false), sleep(WAKE_SETTLE_MS).then(() => false)]);
    if (!woke) return { replica, waitedMs: null };
    this.opts.observeWake?.(waitedMs / 1000);
    return { replica, waitedMs };
  }

  private begin(s: ServiceState, r: Replica): () => void {
    s.inFlight++;
    r.inFlight++;
    s.peak = Math.max(s.peak, s.inFlight);
    s.lastActiveAt = Date.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      s.inFlight--;
      r.inFlight--;
      s.lastActiveAt = Date.now();
    };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const t = this.targetOf(req);
    if (!t) return unavailable(res, 404, 'no service answers here\n');
    const s = this.stateOf(t);
    // Counted from arrival: a request held through a wake keeps the service awake too.
    s.lastActiveAt = Date.now();
    const retriable = !hasBody(req);
    for (let attempt = 0; attempt < 3; attempt++) {
      const found = await this.replicaFor(t.serviceId, s).catch(() => null);
      if (!found) return unavailable(res, 503, `${req.headers.host ?? 'this service'} has no healthy replica right now\n`);
      const { replica, waitedMs } = found;
      const end = this.begin(s, replica);
      const outcome = await this.forward(req, res, t, replica, waitedMs);
      end();
      // Nothing reached the replica: try again (a refused one is not ready after all).
      if (outcome !== 'done' && retriable && !res.headersSent) {
        if (outcome === 'refused') {
          replica.ready = false;
          s.listedAt = 0;
        }
        continue;
      }
      return;
    }
    if (!res.headersSent) unavailable(res, 503, `${req.headers.host ?? 'this service'} has no healthy replica right now\n`);
  }

  private forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    t: ActivatorTarget,
    r: Replica,
    waitedMs: number | null,
  ): Promise<'done' | 'refused' | 'reset'> {
    return new Promise((resolve) => {
      const up = http.request({ host: r.address, port: t.port, method: req.method, path: req.url, headers: forwardHeaders(req), agent: this.agent });
      up.on('response', (answer) => {
        const headers = { ...answer.headers };
        for (const h of HOP_BY_HOP) delete headers[h];
        if (waitedMs !== null) headers['server-timing'] = [...[headers['server-timing'] ?? []].flat(), `wake;dur=${waitedMs}`];
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
        answer.on('error', () => res.destroy());
        res.on('close', () => {
          answer.destroy();
          resolve('done');
        });
      });
      up.on('error', (err: NodeJS.ErrnoException) => {
        if (res.headersSent) {
          res.destroy();
          return resolve('done');
        }
        // Refused, or a pooled connection the replica had closed meanwhile (Node's advice:
        // retry when a reused socket is reset): nothing reached the replica.
        if (err.code === 'ECONNREFUSED' || err.code === 'EHOSTUNREACH') return resolve('refused');
        if (up.reusedSocket && err.code === 'ECONNRESET') return resolve('reset');
        unavailable(res, 502, 'the replica closed the connection\n');
        resolve('done');
      });
      req.on('close', () => {
        if (!req.complete) up.destroy();
      });
      // A retry after a refused connection: the request (with no body) was read already.
      if (req.readableEnded) up.end();
      else req.pipe(up);
    });
  }

  private async upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const t = this.targetOf(req);
    if (!t) return void socket.destroy();
    const s = this.stateOf(t);
    s.lastActiveAt = Date.now();
    const found = await this.replicaFor(t.serviceId, s).catch(() => null);
    if (!found) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const end = this.begin(s, found.replica);
    const upstream = net.connect({ host: found.replica.address, port: t.port });
    const close = () => {
      end();
      upstream.destroy();
      socket.destroy();
    };
    upstream.once('connect', () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      const headers = req.rawHeaders;
      for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    // Either side ending ends both (the HTTP server's sockets allow half-open ones).
    for (const side of [upstream, socket]) for (const event of ['error', 'end', 'close']) side.on(event, close);
    this.tunnels.add(socket);
    socket.once('close', () => this.tunnels.delete(socket));
  }
}

function hasBody(req: http.IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** The request's headers without hop-by-hop ones. */
function forwardHeaders(req: http.IncomingMessage): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP_BY_HOP.has(k)) continue;
    out[k] = v;
  }
  return out;
}

function unavailable(res: http.ServerResponse, status: number, body: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...(status === 503 ? { 'retry-after': '5' } : {}) });
  res.end(`${status} ${http.STATUS_CODES[status]}: ${body}`);
}
