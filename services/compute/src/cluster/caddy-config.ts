// The edge's whole Caddy configuration, as one JSON document. Compute loads it in one
// request, so every change is a full, declarative replace, and a load closes the idle
// connections of every client (Go's server shutdown): a client that sends on one at that
// moment gets a reset. So what changes often is not in it: which service a host goes to is
// asked per host of compute's route DNS (edge/route-dns.ts) by one dynamic route, and a
// service created, deleted or given a domain changes no configuration. Loads remain for
// certificates and ACME challenges (a custom domain's certificate: rare), and at start.
import type { EdgeRoute } from '../domain/edge/edge-port.ts';

/** Where certificates live in the edge container (a volume, with Caddy's own state). */
export const CERT_DIR = '/data/certs';
/** File names of the apps domain's certificate when the operator gives one. */
export const APPS_CERT = '_apps';
/** The route DNS's names for the host's bridge address, where the activator listens, and for the edge container's own loopback. */
export const ACTIVATOR_HOST = 'pier-activator.pier';
export const LOOPBACK = 'loopback.pier';
/**
 * Where a host with no running replica is sent: nothing listens there, so Caddy retries
 * (asking the route DNS again each time) until a replica appears or its tries run out.
 */
export const NO_REPLICA = { target: LOOPBACK, port: 1 } as const;
/**
 * Where a host no service has is sent: a server of the edge's own that answers 404. An answer
 * rather than NXDOMAIN, because Caddy treats a failed lookup as compute being away (it keeps
 * its last answer, and with none has nowhere to send the request).
 */
export const UNKNOWN_HOST = { target: LOOPBACK, port: 8404 } as const;

export interface Challenge {
  hostname: string;
  token: string;
  keyAuthorization: string;
}

export interface CaddyConfigInput {
  routes: Pick<EdgeRoute, 'tlsHosts'>[];
  challenges: Challenge[];
  appsDomain: string;
  /** The operator gave a certificate for `*.<apps domain>` (else Caddy's internal CA makes one). */
  appsCertificate: boolean;
  /** Where compute's route DNS listens (host:port), as the edge container reaches it. */
  routeDns: string;
}

const text = { 'Content-Type': ['text/plain; charset=utf-8'] };
const notFound = { handler: 'static_response', status_code: 404, headers: text, body: '404 Not Found: no service answers at {http.request.host}\n' };

/** Every service host: to the targets compute's route DNS gives for the request's Host. */
function proxy(routeDns: string) {
  return {
    handler: 'reverse_proxy',
    dynamic_upstreams: {
      source: 'srv',
      // Rooted, so the name is asked as it is (no search domains).
      name: '{http.request.host}.',
      // Re-asked four times a second (and before each retry), so a deploy, scale, wake or
      // route change reaches the edge within that; while compute is away (a restart), the
      // last answer stays in use.
      refresh: '250ms',
      grace_period: '1h',
      resolver: { addresses: [`udp/${routeDns}`] },
      dial_timeout: '1s',
    },
    load_balancing: {
      selection_policy: { policy: 'round_robin' },
      // A replica going away (a rollout retiring it) refuses connections, or no longer
      // resolves, for up to a refresh: try another one for a while rather than answer an
      // error. Short waits between tries, and a short dial: replicas and the activator are
      // on bridges of this host, where a handshake takes well under a millisecond however
      // busy the other end is; the dial includes asking compute's route DNS the address,
      // which a busy compute answers in a few ms. So 200 ms only waits on an address that
      // is gone, and a compute pause does not make a healthy replica look failed.
      try_duration: '5s',
      try_interval: '20ms',
      retry_match: [{ method: ['GET', 'HEAD', 'OPTIONS'] }],
    },
    health_checks: { passive: { fail_duration: '3s', max_fails: 1 } },
    // Event streams and long polls pass through as they are written.
    flush_interval: -1,
    // Targets' addresses come from the route DNS too (Go asks DNS, never /etc/hosts, for the
    // rooted names SRV gives). Idle connections are let go before the activator would close
    // them (its keepAliveTimeout).
    transport: {
      protocol: 'http',
      dial_timeout: '200ms',
      resolver: { addresses: [`udp/${routeDns}`] },
      keep_alive: { idle_timeout: '60s', max_idle_conns_per_host: 256 },
    },
  };
}

function serviceRoutes(input: CaddyConfigInput) {
  const challenges = input.challenges.map((c) => ({
    match: [{ host: [c.hostname], path: [`/.well-known/acme-challenge/${c.token}`] }],
    handle: [{ handler: 'static_response', status_code: 200, headers: text, body: c.keyAuthorization }],
    terminal: true,
  }));
  // An address for a Host (a client that dialled the edge's IP) is no name to ask DNS about.
  const byAddress = {
    match: [{ vars_regexp: { '{http.request.host}': { pattern: '^[0-9.]*$|:' } } }],
    handle: [notFound],
    terminal: true,
  };
  return [...challenges, byAddress, { handle: [proxy(input.routeDns)], terminal: true }];
}

const unknownHost = {
  listen: [`127.0.0.1:${UNKNOWN_HOST.port}`],
  automatic_https: { disable: true },
  routes: [{ handle: [notFound] }],
};

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

/** The access logger's name: Caddy's server logs go to `http.log.access.<this>`. */
const ACCESS_LOGGER = 'pier';

/**
 * Each request the edge answers, one JSON line on the container's stdout (its other logs
 * stay on stderr), for service metrics (cluster/docker-edge-traffic.ts): the host, the
 * status and the duration are all that is kept. The URI, headers, client address and TLS
 * details are deleted before the line is written — a query string or a header may hold a
 * token, and Docker keeps the container's output on disk.
 */
const logging = {
  logs: {
    default: { exclude: [`http.log.access.${ACCESS_LOGGER}`] },
    [ACCESS_LOGGER]: {
      writer: { output: 'stdout' },
      encoder: {
        format: 'filter',
        wrap: { format: 'json' },
        fields: Object.fromEntries(
          ['request>uri', 'request>headers', 'request>remote_ip', 'request>remote_port', 'request>client_ip', 'request>tls', 'resp_headers', 'user_id'].map(
            (f) => [f, { filter: 'delete' }],
          ),
        ),
      },
      include: [`http.log.access.${ACCESS_LOGGER}`],
    },
  },
};
const accessLog = { default_logger_name: ACCESS_LOGGER };

export function caddyConfig(input: CaddyConfigInput): Record<string, unknown> {
  const routes = serviceRoutes(input);
  const customTls = input.routes.flatMap((r) => r.tlsHosts);
  const files = customTls.map((h) => ({ certificate: `${CERT_DIR}/${h}.crt`, key: `${CERT_DIR}/${h}.key` }));
  if (input.appsCertificate) files.push({ certificate: `${CERT_DIR}/${APPS_CERT}.crt`, key: `${CERT_DIR}/${APPS_CERT}.key` });
  const wildcard = `*.${input.appsDomain}`;
  return {
    admin: { listen: 'unix//run/pier-edge/admin.sock' },
    logging,
    apps: {
      http: {
        servers: {
          // Plain HTTP serves the same routes (no redirect): ACME's HTTP-01 and clients that
          // terminate TLS in front of the platform both need it.
          http: { listen: [':80'], automatic_https: { disable: true }, routes, errors, logs: accessLog },
          https: { listen: [':443'], automatic_https: { disable: true }, tls_connection_policies: [{}], routes, errors, logs: accessLog },
          unknown: unknownHost,
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
