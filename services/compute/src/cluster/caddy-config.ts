// The edge's whole Caddy configuration, as one JSON document built from the routing table.
// Compute loads it in one request (Caddy swaps configurations gracefully: connections in
// flight finish on the old one), so every change is a full, declarative replace.
import type { EdgeRoute } from '../domain/edge/edge-port.ts';
import { edgeUpstream } from './docker-labels.ts';
import { ACTIVATOR_HEADERS } from '../edge/activator.ts';

/** Where certificates live in the edge container (a volume, with Caddy's own state). */
export const CERT_DIR = '/data/certs';
/** File names of the apps domain's certificate when the operator gives one. */
export const APPS_CERT = '_apps';

export interface Challenge {
  hostname: string;
  token: string;
  keyAuthorization: string;
}

export interface CaddyConfigInput {
  routes: EdgeRoute[];
  challenges: Challenge[];
  appsDomain: string;
  /** The operator gave a certificate for `*.<apps domain>` (else Caddy's internal CA makes one). */
  appsCertificate: boolean;
  /** Where the activator listens (host:port), for routes that go through it; null: none runs. */
  activator: string | null;
}

const text = { 'Content-Type': ['text/plain; charset=utf-8'] };

/**
 * An elastic service's route: to the activator, which finds the replicas itself (and wakes
 * them). Who the request is for is set here, over anything the client sent under those names.
 */
function viaActivator(r: EdgeRoute, activator: string) {
  return {
    handler: 'reverse_proxy',
    upstreams: [{ dial: activator }],
    headers: {
      request: {
        set: {
          [ACTIVATOR_HEADERS.service]: [r.serviceId],
          [ACTIVATOR_HEADERS.vpc]: [r.vpcId],
          [ACTIVATOR_HEADERS.port]: [String(r.port)],
          [ACTIVATOR_HEADERS.health]: [r.activator?.healthPath ?? ''],
        },
      },
    },
    // Event streams and long polls pass through as they are written.
    flush_interval: -1,
    // Idle connections are let go before the activator would close them (its keepAliveTimeout).
    transport: { protocol: 'http', dial_timeout: '1s', keep_alive: { idle_timeout: '60s' } },
  };
}

function proxyTo(r: EdgeRoute) {
  return {
    handler: 'reverse_proxy',
    // Docker's DNS answers the alias with every running replica; re-read four times a second,
    // so a deploy, scale or restart reaches the edge without a configuration change.
    dynamic_upstreams: { source: 'a', name: edgeUpstream(r.serviceId, r.vpcId), port: String(r.port), refresh: '250ms' },
    load_balancing: {
      selection_policy: { policy: 'round_robin' },
      // A replica going away (a rollout retiring it) refuses connections, or no longer
      // answers for up to a DNS refresh: try another one for a while rather than answer an
      // error. Short waits between tries, and a short dial, because a configuration load
      // (a service created or deleted) ends every retry still waiting under the old
      // configuration with a 502: at 100 ms and 250 ms, a load during a rollout answered a
      // few requests 503 in each edge benchmark run; at 20 ms and 50 ms none did.
      try_duration: '5s',
      try_interval: '20ms',
      retry_match: [{ method: ['GET', 'HEAD', 'OPTIONS'] }],
    },
    health_checks: { passive: { fail_duration: '3s', max_fails: 1 } },
    // Replicas are on a bridge of this host: a handshake takes well under a millisecond (the
    // kernel answers it however busy the replica is), so 50 ms only ever waits on an address
    // whose container is gone.
    transport: { protocol: 'http', dial_timeout: '50ms' },
  };
}

function serviceRoutes(input: CaddyConfigInput) {
  const challenges = input.challenges.map((c) => ({
    match: [{ host: [c.hostname], path: [`/.well-known/acme-challenge/${c.token}`] }],
    handle: [{ handler: 'static_response', status_code: 200, headers: text, body: c.keyAuthorization }],
    terminal: true,
  }));
  const services = input.routes.map((r) => ({
    match: [{ host: [r.serviceHost, ...r.customHosts] }],
    handle: [r.activator && input.activator ? viaActivator(r, input.activator) : proxyTo(r)],
    terminal: true,
  }));
  const unknown = {
    handle: [{ handler: 'static_response', status_code: 404, headers: text, body: '404 Not Found: no service answers at {http.request.host}\n' }],
  };
  return [...challenges, ...services, unknown];
}

/** No replica to send to (none running, or all failing): one clear 503 rather than Caddy's bare 502. */
const errors = {
  routes: [
    {
      match: [{ vars: { '{http.error.status_code}': ['502', '503'] } }],
      handle: [
        {
          handler: 'static_response',
          status_code: 503,
          headers: { ...text, 'Retry-After': ['5'] },
          body: '503 Service Unavailable: {http.request.host} has no healthy replica right now\n',
        },
      ],
    },
  ],
};

export function caddyConfig(input: CaddyConfigInput): Record<string, unknown> {
  const routes = serviceRoutes(input);
  const customTls = input.routes.flatMap((r) => r.tlsHosts);
  const files = customTls.map((h) => ({ certificate: `${CERT_DIR}/${h}.crt`, key: `${CERT_DIR}/${h}.key` }));
  if (input.appsCertificate) files.push({ certificate: `${CERT_DIR}/${APPS_CERT}.crt`, key: `${CERT_DIR}/${APPS_CERT}.key` });
  const wildcard = `*.${input.appsDomain}`;
  return {
    admin: { listen: 'unix//run/pier-edge/admin.sock' },
    apps: {
      http: {
        servers: {
          // Plain HTTP serves the same routes (no redirect): ACME's HTTP-01 and clients that
          // terminate TLS in front of the platform both need it.
          http: { listen: [':80'], automatic_https: { disable: true }, routes, errors },
          https: { listen: [':443'], automatic_https: { disable: true }, tls_connection_policies: [{}], routes, errors },
        },
      },
      // The internal CA signs the apps domain's certificate; installing its root into the
      // container's own trust stores would only slow every configuration load down.
      pki: { certificate_authorities: { local: { install_trust: false } } },
      tls: {
        certificates: {
          ...(files.length ? { load_files: files } : {}),
          ...(input.appsCertificate ? {} : { automate: [wildcard] }),
        },
        ...(input.appsCertificate ? {} : { automation: { policies: [{ subjects: [wildcard], issuers: [{ module: 'internal' }] }] } }),
      },
    },
  };
}
