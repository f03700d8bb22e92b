import { z } from 'zod';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { serviceEnv, port, loadConfig } from '@pier/kit';
import { checkDiskBackupEnv, diskBackupEnv } from './disk-backup-config.ts';

/** A comma-separated list (empty by default), each item matching `item` (`what` says what it is) when given. */
const list = (name: string, item?: RegExp, what = 'ip or ip:port') =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((items) => !item || items.every((x) => item.test(x)), `${name} must be a comma-separated list of ${what}`);

export const computeEnv = serviceEnv
  .extend({
    PIER_COMPUTE_HTTP_PORT: port(7102),
    /** Which cluster runs the services: `docker` (one machine, the default) or `kubernetes`. */
    PIER_CLUSTER: z.enum(['docker', 'kubernetes']).default('docker'),
    /** docker: the Engine API, `unix:///var/run/docker.sock` (default) or `tcp://host:port`. */
    PIER_DOCKER_HOST: z
      .string()
      .regex(/^(unix|tcp):\/\/.+/, 'PIER_DOCKER_HOST must be unix:///path/to/docker.sock or tcp://host:port')
      .optional(),
    /** kubernetes: kubeconfig file; without it the in-cluster service account (or $KUBECONFIG) is used. */
    PIER_KUBECONFIG: z.string().min(1).optional(),
    /** The secrets service's gRPC address (host:port); without it secret references are refused (503). */
    PIER_SECRETS_GRPC_URL: z.string().min(1).optional(),
    /** Compute's own Ed25519 private JWK: signs the identity compute presents to the secrets service. */
    PIER_COMPUTE_SERVICE_PRIVATE_KEY: z.string().min(1).optional(),
    /**
     * kubernetes: keep a watch-fed copy of compute's pods, so reads of a VPC's state make no
     * API call and the reconciler looks only where pods changed. `off`: list pods on every read.
     */
    PIER_COMPUTE_KUBE_WATCH: z.enum(['on', 'off']).default('on'),
    /** How often rollouts in progress are settled and teardowns finished without a read asking. */
    PIER_COMPUTE_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
    /**
     * A create or rollout left pending for less than this may be a request still in flight,
     * so the reconciler leaves it alone (at start-up it takes everything: nothing is in flight).
     */
    PIER_COMPUTE_PENDING_GRACE_SECONDS: z.coerce.number().min(0, 'PIER_COMPUTE_PENDING_GRACE_SECONDS must be 0 or more').default(120),
    /** How often the reconciler lists each VPC's workloads for ones the records do not account for (and at start-up). */
    PIER_COMPUTE_SWEEP_INTERVAL_SECONDS: z.coerce.number().positive('PIER_COMPUTE_SWEEP_INTERVAL_SECONDS must be above 0').default(20),
    /** docker: how often the cron scheduler looks for due runs. */
    PIER_COMPUTE_CRON_INTERVAL_MS: z.coerce.number().int().min(100).default(5000),
    /** Days service log history is kept (whole days are dropped past it). */
    PIER_COMPUTE_LOG_RETENTION_DAYS: z.coerce.number().int().min(1, 'PIER_COMPUTE_LOG_RETENTION_DAYS must be at least 1 (days)').default(7),
    /** Collected log lines stored per batch: a batch is written once this many wait (or every flush interval). */
    PIER_COMPUTE_LOG_BATCH_LINES: z.coerce.number().int().min(1, 'PIER_COMPUTE_LOG_BATCH_LINES must be at least 1').default(1000),
    /** How often collected log lines are stored when fewer than a batch wait. */
    PIER_COMPUTE_LOG_FLUSH_MS: z.coerce.number().int().min(10, 'PIER_COMPUTE_LOG_FLUSH_MS must be at least 10 ms').default(1000),
    /** How often the cluster is listed for replicas to collect logs from (docker also learns of new ones at once, from its events). */
    PIER_COMPUTE_LOG_SCAN_MS: z.coerce.number().int().min(100, 'PIER_COMPUTE_LOG_SCAN_MS must be at least 100 ms').default(5000),
    /** Service metrics: how often every replica's CPU and memory are read from the cluster. */
    PIER_COMPUTE_METRICS_SAMPLE_MS: z.coerce
      .number()
      .int()
      .min(500, 'PIER_COMPUTE_METRICS_SAMPLE_MS must be 500 to 60000 ms')
      .max(60_000, 'PIER_COMPUTE_METRICS_SAMPLE_MS must be 500 to 60000 ms')
      .default(15_000),
    /** Service metrics: how often what was gathered is written (at most a minute: the rollup waits that long for an hour's rows). */
    PIER_COMPUTE_METRICS_FLUSH_MS: z.coerce
      .number()
      .int()
      .min(200, 'PIER_COMPUTE_METRICS_FLUSH_MS must be 200 to 60000 ms')
      .max(60_000, 'PIER_COMPUTE_METRICS_FLUSH_MS must be 200 to 60000 ms')
      .default(15_000),
    /**
     * kubernetes: Traefik's Prometheus endpoints (comma-separated http(s) URLs), where service
     * metrics read the requests the ingress controller answers; each address a URL's host
     * resolves to is read as one Traefik (a headless Service names every replica). Traefik
     * needs `metrics.prometheus.addRoutersLabels: true`. Empty: requests are not counted.
     */
    PIER_COMPUTE_INGRESS_METRICS_URLS: list('PIER_COMPUTE_INGRESS_METRICS_URLS', /^https?:\/\/[^/\s]+(\/\S*)?$/, 'http(s) URLs'),
    /** How often Traefik's metrics are read (the time a request is counted at is within this of when it was answered). */
    PIER_COMPUTE_INGRESS_METRICS_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(500, 'PIER_COMPUTE_INGRESS_METRICS_INTERVAL_MS must be 500 to 60000 ms')
      .max(60_000, 'PIER_COMPUTE_INGRESS_METRICS_INTERVAL_MS must be 500 to 60000 ms')
      .default(10_000),
    /** Longest silence on a followed log stream before a keep-alive comment (at most 15 s). */
    PIER_COMPUTE_SSE_KEEPALIVE_MS: z.coerce.number().int().min(10).max(15_000, 'PIER_COMPUTE_SSE_KEEPALIVE_MS must be 10 to 15000 ms').default(15_000),
    /** A shell (exec) with no input and no output for this long is ended. */
    PIER_COMPUTE_EXEC_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).default(900),
    /** No shell (exec) lasts longer than this. */
    PIER_COMPUTE_EXEC_MAX_SECONDS: z.coerce.number().int().min(1).default(3600),
    /** Sleep, wake and autoscaling on docker (domain/elastic); `off` leaves every service at the replicas its configuration says. */
    PIER_COMPUTE_ELASTIC: z.enum(['on', 'off']).default('on'),
    /** How long the load must stay low before the autoscaler removes replicas (scale-up reacts within seconds). */
    PIER_COMPUTE_AUTOSCALE_DOWN_DELAY_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
    /** The average CPU use, in % of the CPU each replica was given, that workers' autoscaling aims at (80: Kubernetes' HPA default, and what Pier's HPAs say there). */
    PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT: z.coerce
      .number()
      .int()
      .min(10, 'PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT must be 10 to 100 (% of the CPU each replica is given)')
      .max(100, 'PIER_COMPUTE_WORKER_CPU_TARGET_PERCENT must be 10 to 100 (% of the CPU each replica is given)')
      .default(80),
    /** How long the edge holds a request for a service that is waking before answering 503. */
    PIER_COMPUTE_WAKE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
    /**
     * On kubernetes: the address (an IP of compute's pod, which the chart sets from
     * status.podIP) the activator listens on and the ingress controller reaches it at, for
     * on_demand services. Unset there: on_demand services do not sleep. Docker ignores it (the
     * activator listens on Docker's default bridge).
     */
    PIER_COMPUTE_ACTIVATOR_ADDRESS: z.ipv4({ error: 'PIER_COMPUTE_ACTIVATOR_ADDRESS must be an IPv4 address (compute pod IP)' }).optional(),
    /** The activator's port; 0 (the default) takes any free one, which is what the edge is told. */
    PIER_COMPUTE_ACTIVATOR_PORT: z.coerce.number().int().min(0).max(65535, 'PIER_COMPUTE_ACTIVATOR_PORT must be 0 to 65535').default(0),
    /** How often the elastic controller looks at the traffic of elastic services. */
    PIER_COMPUTE_ELASTIC_TICK_MS: z.coerce.number().int().min(50).max(60_000).default(500),
    /** Builds running at once in one workspace; the others wait in the queue, in order. */
    PIER_BUILD_CONCURRENCY: z.coerce.number().int().min(1, 'PIER_BUILD_CONCURRENCY must be at least 1 (builds per workspace)').default(2),
    /** A build (its source fetch included) still running after this long fails with a timeout. */
    PIER_BUILD_TIMEOUT_SECONDS: z.coerce.number().int().min(1, 'PIER_BUILD_TIMEOUT_SECONDS must be at least 1').default(1800),
    /** The largest archive POST builds/source-upload takes (a 413 past it); unpacked, it may be five times that. */
    PIER_BUILD_UPLOAD_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024, 'PIER_BUILD_UPLOAD_LIMIT_BYTES must be at least 1024')
      .default(100 * 1024 * 1024),
    /** Log kept per build, in bytes; the rest is dropped with a note. */
    PIER_BUILD_LOG_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024, 'PIER_BUILD_LOG_LIMIT_BYTES must be at least 1024')
      .default(5 * 1024 * 1024),
    /**
     * Hosts (names or IP addresses, comma-separated) a git build may fetch from whatever they
     * resolve to, private addresses included. Empty by default: only public hosts. Tests list
     * their local git server here; nothing else should.
     */
    PIER_BUILD_ALLOWED_HOSTS: list('PIER_BUILD_ALLOWED_HOSTS'),
    /** Allow http:// repository URLs besides https:// (`true`/`false`, default false). */
    PIER_BUILD_ALLOW_HTTP: z
      .enum(['true', 'false'], { error: 'PIER_BUILD_ALLOW_HTTP must be true or false' })
      .default('false')
      .transform((v) => v === 'true'),
    /** DNS servers (`ip` or `ip:port`, comma-separated) that user-given host names are resolved with; the system's resolver when empty. */
    PIER_DNS_RESOLVERS: list('PIER_DNS_RESOLVERS', /^(\d{1,3}(\.\d{1,3}){3}(:\d+)?|\[[0-9a-fA-F:]+\](:\d+)?|[0-9a-fA-F:]+)$/),
    /** Where sources wait for their build (uploads) and are fetched to (git). */
    PIER_BUILD_WORK_DIR: z.string().min(1).default(path.join(tmpdir(), 'pier-builds')),
    /** How often the build queue is looked at (it is also looked at when a build is queued). */
    PIER_BUILD_INTERVAL_MS: z.coerce.number().int().min(100).default(2000),
    /**
     * docker: the host firewall that keeps VPC and build containers off the host and off
     * link-local addresses (169.254.169.254), kept by compute in a container of
     * PIER_EGRESS_FIREWALL_IMAGE: `on` (default; nothing tenant-made starts until it is in
     * place) or `off` (the host's firewall is the operator's: README, "Egress and privileges").
     */
    PIER_EGRESS_FIREWALL: z.enum(['on', 'off'], { error: 'PIER_EGRESS_FIREWALL must be on or off' }).default('on'),
    /** docker: the egress firewall's image (built locally by deploy/images/build.sh netfilter). */
    PIER_EGRESS_FIREWALL_IMAGE: z.string().min(1).default('pier/netfilter:1'),
    /** docker: memory of a build step's container, in MiB. */
    PIER_BUILD_MEMORY_MIB: z.coerce.number().int().min(64, 'PIER_BUILD_MEMORY_MIB must be at least 64').default(2048),
    /** kubernetes: the registry (and path) build Jobs push to, e.g. `registry.example.com/pier`; without it builds answer 503. */
    PIER_BUILD_REGISTRY: z.string().min(1).optional(),
    /** kubernetes: the namespace build Jobs run in. */
    PIER_BUILD_NAMESPACE: z.string().min(1).default('pier-builds'),
    /** kubernetes: the rootless BuildKit image of build Jobs. */
    PIER_BUILDKIT_IMAGE: z.string().min(1).default('moby/buildkit:v0.17.3-rootless'),
    /** kubernetes: the image of build Jobs' push step (skopeo; deploy/images/image-push), the only container with the push credentials. */
    PIER_BUILD_PUSH_IMAGE: z.string().min(1).default('pier/image-push:1'),
    /** kubernetes: a Secret of type kubernetes.io/dockerconfigjson in the build namespace, with the credentials to push. */
    PIER_BUILD_PUSH_SECRET: z.string().min(1).optional(),
    /** kubernetes: a ConfigMap in the build namespace whose `ca.crt` signs a private registry's certificate. */
    PIER_BUILD_REGISTRY_CA: z.string().min(1).optional(),
    /**
     * kubernetes: capabilities added to the bounding set of build Jobs' BuildKit container (none
     * by default). Some kernels refuse newuidmap's write of the build's user namespace map
     * without CAP_SYS_ADMIN there; only the setuid newuidmap/newgidmap of the image gain it.
     */
    PIER_BUILDKIT_ADD_CAPABILITIES: list('PIER_BUILDKIT_ADD_CAPABILITIES', /^[A-Z_]+$/),
    /** The shortest interval an uptime monitor may ask for, in seconds (the API's rule is 30; tests lower it). */
    PIER_UPTIME_MIN_INTERVAL_SECONDS: z.coerce
      .number()
      .int()
      .min(1, 'PIER_UPTIME_MIN_INTERVAL_SECONDS must be 1 to 3600 (seconds)')
      .max(3600, 'PIER_UPTIME_MIN_INTERVAL_SECONDS must be 1 to 3600 (seconds)')
      .default(30),
    /** Uptime checks in flight at once in one compute. */
    PIER_UPTIME_CONCURRENCY: z.coerce.number().int().min(1, 'PIER_UPTIME_CONCURRENCY must be at least 1 (checks at once)').default(16),
    /** How often due uptime checks are looked for. */
    PIER_UPTIME_TICK_MS: z.coerce.number().int().min(50, 'PIER_UPTIME_TICK_MS must be at least 50 ms').default(1000),
    /** Days of hourly uptime counts kept (uptime_7d reads seven). */
    PIER_UPTIME_RETENTION_DAYS: z.coerce.number().int().min(7, 'PIER_UPTIME_RETENTION_DAYS must be at least 7 (uptime_7d reads seven days)').default(8),
    /** The edge (a reverse proxy in front of every web service): `on` (default) or `off` (no public URLs, no custom domains). */
    PIER_EDGE: z.enum(['on', 'off'], { error: 'PIER_EDGE must be on or off' }).default('on'),
    /** Every web service answers at https://<name>-<short id>.<apps domain>. The default resolves to this machine in curl and browsers. */
    PIER_APPS_DOMAIN: z
      .string()
      .regex(
        /^(?=.{1,200}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/,
        'PIER_APPS_DOMAIN must be a lowercase DNS domain such as apps.example.com',
      )
      .default('pier.localhost'),
    /** docker: the edge container's name (its volume is `<name>-data`). */
    PIER_EDGE_CONTAINER: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/, 'PIER_EDGE_CONTAINER must be a container name')
      .default('pier-edge'),
    /** docker: the edge's image (built locally by deploy/images/build.sh). */
    PIER_EDGE_IMAGE: z.string().min(1).default('pier/edge:1'),
    /** docker: host port for HTTP (0: any free port). */
    PIER_EDGE_HTTP_PORT: z.coerce.number().int().min(0).max(65535, 'PIER_EDGE_HTTP_PORT must be 0 to 65535').default(80),
    /** docker: host port for HTTPS (0: any free port); kubernetes: the ingress controller's HTTPS port at PIER_EDGE_ADDRESSES. */
    PIER_EDGE_HTTPS_PORT: z.coerce.number().int().min(0).max(65535, 'PIER_EDGE_HTTPS_PORT must be 0 to 65535').default(443),
    /**
     * docker: the UDP port of the route DNS the edge asks which service a host goes to, on
     * Docker's default bridge. Fixed, so an edge keeps finding it across a restart of compute
     * (0: any free port, and the edge learns the new one at compute's first sync).
     */
    PIER_EDGE_ROUTE_DNS_PORT: z.coerce.number().int().min(0).max(65535, 'PIER_EDGE_ROUTE_DNS_PORT must be 0 to 65535').default(7153),
    /** docker: the host address the edge's ports are published on. */
    PIER_EDGE_BIND_ADDRESS: z.string().min(1).default('0.0.0.0'),
    /** The edge's public addresses (an apex domain's A/AAAA records point there); docker: the edge container's own when empty. */
    PIER_EDGE_ADDRESSES: list('PIER_EDGE_ADDRESSES', /^([0-9.]+|[0-9a-fA-F:]+)$/),
    /** docker: a certificate (PEM file) for *.<apps domain>, with its key; without them the edge's internal CA signs one. */
    PIER_EDGE_APPS_CERT_FILE: z.string().min(1).optional(),
    PIER_EDGE_APPS_KEY_FILE: z.string().min(1).optional(),
    /**
     * kubernetes: a CA (PEM file) the ingress controller's certificates chain to, when it is a
     * private one: uptime checks, which go through the ingress as users do, trust it.
     */
    PIER_EDGE_CA_FILE: z.string().min(1).optional(),
    /** kubernetes: a TLS Secret (in each VPC namespace) for *.<apps domain>. */
    PIER_EDGE_APPS_TLS_SECRET: z.string().min(1).optional(),
    /** kubernetes: the IngressClass of Pier's Ingresses (the cluster's default when unset). */
    PIER_EDGE_INGRESS_CLASS: z.string().min(1).optional(),
    /** kubernetes: the cert-manager ClusterIssuer of custom domains' Certificates. */
    PIER_EDGE_CLUSTER_ISSUER: z.string().min(1).default('pier-acme'),
    /** How often the routing table is re-sent to the edge and certificates looked after. */
    PIER_EDGE_SYNC_INTERVAL_MS: z.coerce.number().int().min(100).default(5000),
    /** docker: the ACME directory custom domains' certificates come from. */
    PIER_ACME_DIRECTORY_URL: z
      .url({ protocol: /^https$/, error: 'PIER_ACME_DIRECTORY_URL must be an https:// URL' })
      .default('https://acme-v02.api.letsencrypt.org/directory'),
    /** docker: the ACME account's contact address (the CA's expiry notices). */
    PIER_ACME_EMAIL: z.email({ error: 'PIER_ACME_EMAIL must be an email address' }).optional(),
    /** docker: a CA (PEM file) to trust for the ACME directory's own TLS, for a private ACME server. */
    PIER_ACME_CA_FILE: z.string().min(1).optional(),
    /** docker: an issuance taking longer than this fails. */
    PIER_ACME_TIMEOUT_SECONDS: z.coerce.number().int().min(5, 'PIER_ACME_TIMEOUT_SECONDS must be at least 5').default(90),
    /** Certificates are renewed once they expire within this many days. */
    PIER_ACME_RENEW_BEFORE_DAYS: z.coerce.number().min(0, 'PIER_ACME_RENEW_BEFORE_DAYS must be 0 or more').default(30),
    /** Custom domains one service may hold. */
    PIER_DOMAINS_PER_SERVICE: z.coerce.number().int().min(1, 'PIER_DOMAINS_PER_SERVICE must be at least 1').default(20),
    /**
     * Hours an unverified domain claim lasts (fractions allowed; 168, seven days, by default).
     * Past it the claim is gone: it keeps no one from the hostname, which only a verified
     * domain holds.
     */
    PIER_DOMAIN_CLAIM_TTL_HOURS: z.coerce.number().positive('PIER_DOMAIN_CLAIM_TTL_HOURS must be more than 0 (hours)').default(168),
    ...diskBackupEnv,
  })
  .superRefine((env, ctx) => {
    checkDiskBackupEnv(env, ctx);
    if (Boolean(env.PIER_EDGE_APPS_CERT_FILE) !== Boolean(env.PIER_EDGE_APPS_KEY_FILE)) {
      ctx.addIssue({ code: 'custom', path: ['PIER_EDGE_APPS_KEY_FILE'], message: 'PIER_EDGE_APPS_CERT_FILE and PIER_EDGE_APPS_KEY_FILE go together' });
    }
    if (env.PIER_SECRETS_GRPC_URL && !env.PIER_COMPUTE_SERVICE_PRIVATE_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['PIER_COMPUTE_SERVICE_PRIVATE_KEY'],
        message: 'PIER_COMPUTE_SERVICE_PRIVATE_KEY is required with PIER_SECRETS_GRPC_URL (compute signs its calls to secrets)',
      });
    }
  });

export type ComputeConfig = z.infer<typeof computeEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): ComputeConfig => loadConfig(computeEnv, env);
