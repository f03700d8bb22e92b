/**
 * `./pier up`: the whole platform on this machine, in the foreground, until Ctrl-C.
 *
 * PostgreSQL: PIER_DATABASE_URL (an admin URL; its database is used) or an embedded
 * server whose data lives in $PIER_HOME/postgres. NATS: PIER_NATS_URL, a `nats-server` on
 * PATH, or a local NATS image in Docker; one the launcher starts has a user per service,
 * each held to its own subjects (nats.ts). Keys and passwords are generated on the first
 * run and kept in $PIER_HOME/state.json (0600). $PIER_HOME defaults to `.pier/` in the
 * repository. Each service runs as a child process with its own environment; the CLI's
 * bootstrap files land in $PIER_CONFIG_DIR (default ~/.config/pier). Every child stops with
 * the launcher, even when the launcher is SIGKILLed (parent-death.ts). Logs are readable on
 * a terminal and JSON lines elsewhere (log-format.ts). See README.md here.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { provisionServiceRoles } from '@pier/kit';
import { loadState } from './state.ts';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedPostgres } from './postgres.ts';
import { findNats, MissingDependency, type RunningNats } from './nats.ts';
import { portInUse, ServiceProcess } from './children.ts';
import { chooseFormat, logLineWriter } from './log-format.ts';
import { parentDeath } from './parent-death.ts';
import { dockerProblem } from './docker-check.ts';
import { buildConsole } from '../../packages/console/scripts/build.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const env = process.env;
const home = path.resolve(env.PIER_HOME || path.join(root, '.pier'));
const startedAt = performance.now();
const format = chooseFormat(env, Boolean(process.stdout.isTTY));
const lines = logLineWriter(format, Boolean(process.stdout.isTTY) && !env.NO_COLOR);
const say = (line: string, level: 30 | 40 = 30) => process.stdout.write(lines.own(level, line));
const death = parentDeath();
const childOptions = {
  parentDeath: death,
  onLine: (service: string, line: string, stream: 'stdout' | 'stderr') => process.stdout.write(lines.child(service, line, stream)),
};

const num = (name: string, fallback: number) => Number(env[name] || fallback);
const ports = {
  gateway: num('PIER_GATEWAY_PORT', 7100),
  gatewayMetrics: num('PIER_GATEWAY_METRICS_PORT', 7109),
  authHttp: num('PIER_AUTH_HTTP_PORT', 7101),
  authGrpc: num('PIER_AUTH_GRPC_PORT', 7111),
  compute: num('PIER_COMPUTE_HTTP_PORT', 7102),
  databases: num('PIER_DATABASES_HTTP_PORT', 7103),
  secretsHttp: num('PIER_SECRETS_HTTP_PORT', 7104),
  secretsGrpc: num('PIER_SECRETS_GRPC_PORT', 7114),
  events: num('PIER_EVENTS_HTTP_PORT', 7105),
  postgres: num('PIER_POSTGRES_PORT', 7120),
  nats: num('PIER_LOCAL_NATS_PORT', 7122),
};
const host = env.PIER_BIND_HOST || '127.0.0.1';
const local = (port: number) => `http://127.0.0.1:${port}`;

let postgres: EmbeddedPostgres | undefined;
let nats: RunningNats | undefined;
const services: ServiceProcess[] = [];
let stopping = false;

async function stopAll(): Promise<void> {
  // Gateway first (no new requests), auth, then the resource services; infrastructure last.
  for (const s of [...services].reverse()) await s.stop();
  await nats?.stop();
  await postgres?.stop();
}

async function checkPorts(wanted: [string, number][]): Promise<void> {
  const busy: string[] = [];
  for (const [name, port] of wanted) if (await portInUse(port, host)) busy.push(`  ${name}: port ${port}`);
  if (busy.length) {
    throw new MissingDependency(
      `these ports are already in use (is Pier already running?):\n${busy.join('\n')}\n` +
        'stop what holds them, or choose others with PIER_GATEWAY_PORT, PIER_GATEWAY_METRICS_PORT, PIER_AUTH_HTTP_PORT, PIER_AUTH_GRPC_PORT, PIER_COMPUTE_HTTP_PORT, ' +
        'PIER_DATABASES_HTTP_PORT, PIER_SECRETS_HTTP_PORT, PIER_SECRETS_GRPC_PORT, PIER_EVENTS_HTTP_PORT, PIER_POSTGRES_PORT, PIER_LOCAL_NATS_PORT',
    );
  }
}

async function main(): Promise<void> {
  if (!death.available) say('setpriv (util-linux) is not here: a SIGKILL of this launcher would leave its children running; stop it with Ctrl-C', 40);
  // The docker cluster is the default: without an engine nothing can be deployed, so say it
  // once, now, rather than let compute and databases discover it every few seconds.
  if ((env.PIER_CLUSTER ?? 'docker') === 'docker') {
    const problem = await dockerProblem(env.PIER_DOCKER_HOST);
    if (problem) throw new MissingDependency(problem);
  }

  const { state, file, created } = await loadState(home);
  say(`${created ? 'created' : 'using'} ${file} (identity keys and service passwords, mode 0600)`);

  // The web console the gateway serves at /: built here when its sources changed (a few
  // seconds), unless PIER_CONSOLE_DIR names files built elsewhere. A failed build leaves the
  // API running and says why.
  let consoleDir = env.PIER_CONSOLE_DIR;
  if (!consoleDir) {
    const t = performance.now();
    try {
      const built = await buildConsole({ ifNeeded: true });
      consoleDir = built.dir;
      const size = `initial JS ${(built.initialJsGzipBytes / 1024).toFixed(1)} KB gzipped`;
      say(built.built ? `console: built in ${Math.round(performance.now() - t)} ms (${size})` : `console: up to date (${size})`);
    } catch (err) {
      consoleDir = 'off';
      say(`console: the build failed, only the API is served: ${(err as Error).message}`, 40);
    }
  }

  await checkPorts([
    ['gateway', ports.gateway],
    ['gateway metrics', ports.gatewayMetrics],
    ['auth http', ports.authHttp],
    ['auth grpc', ports.authGrpc],
    ['compute', ports.compute],
    ['databases', ports.databases],
    ['secrets http', ports.secretsHttp],
    ['secrets grpc', ports.secretsGrpc],
    ['events', ports.events],
    ...(env.PIER_DATABASE_URL ? [] : ([['embedded PostgreSQL', ports.postgres]] as [string, number][])),
  ]);

  let adminUrl: string;
  if (env.PIER_DATABASE_URL) {
    adminUrl = env.PIER_DATABASE_URL;
    say('PostgreSQL: PIER_DATABASE_URL');
  } else {
    postgres = await startEmbeddedPostgres(home, ports.postgres, state.postgresPassword, say, death);
    adminUrl = await ensureDatabase(postgres.adminUrl, 'pier');
    say(`PostgreSQL: embedded, 127.0.0.1:${ports.postgres}, data in ${postgres.dataDir}`);
  }
  const dbUrls = await provisionServiceRoles(adminUrl, state.servicePasswords);

  if (!env.PIER_NATS_URL && (await portInUse(ports.nats))) {
    throw new MissingDependency(`port ${ports.nats} (NATS) is in use; set PIER_LOCAL_NATS_PORT, or PIER_NATS_URL to use a running NATS`);
  }
  nats = await findNats(home, ports.nats, death, state.natsPasswords);
  say(`NATS: ${nats.how}`);

  // Every child inherits the user's environment (PIER_LOG_LEVEL, PIER_CLUSTER, PIER_OIDC_*,
  // PIER_CONFIG_DIR, ...) and gets its wiring on top.
  const common = (service: keyof typeof dbUrls): NodeJS.ProcessEnv => ({
    ...env,
    PIER_DATABASE_URL: dbUrls[service],
    PIER_NATS_URL: nats!.url,
    ...nats!.credentials(service),
    PIER_IDENTITY_PUBLIC_KEY: state.identity.publicJwk,
    PIER_BIND_HOST: host,
  });
  const urls = {
    compute: local(ports.compute),
    databases: local(ports.databases),
    secrets: local(ports.secretsHttp),
    events: local(ports.events),
    auth: local(ports.authHttp),
    gateway: env.PIER_PUBLIC_URL || local(ports.gateway),
  };
  const entry = (name: string) => path.join('services', name, 'src', 'main.ts');
  const resources = [
    new ServiceProcess(
      'secrets',
      entry('secrets'),
      {
        ...common('secrets'),
        PIER_SECRETS_HTTP_PORT: String(ports.secretsHttp),
        PIER_SECRETS_GRPC_PORT: String(ports.secretsGrpc),
        PIER_SECRETS_STORE_KEY: env.PIER_SECRETS_STORE_KEY || state.secretsStoreKey,
        PIER_SECRETS_STORE_DIR: env.PIER_SECRETS_STORE_DIR || path.join(home, 'secrets'),
        PIER_COMPUTE_SERVICE_PUBLIC_KEY: state.computeKeys.publicJwk,
      },
      `${urls.secrets}/healthz`,
      childOptions,
    ),
    new ServiceProcess(
      'compute',
      entry('compute'),
      {
        ...common('compute'),
        PIER_COMPUTE_HTTP_PORT: String(ports.compute),
        PIER_SECRETS_GRPC_URL: `127.0.0.1:${ports.secretsGrpc}`,
        PIER_COMPUTE_SERVICE_PRIVATE_KEY: state.computeKeys.privateJwk,
      },
      `${urls.compute}/healthz`,
      childOptions,
    ),
    new ServiceProcess(
      'databases',
      entry('databases'),
      { ...common('databases'), PIER_DATABASES_HTTP_PORT: String(ports.databases), PIER_AUTH_GRPC_URL: `127.0.0.1:${ports.authGrpc}` },
      `${urls.databases}/healthz`,
      childOptions,
    ),
    new ServiceProcess('events', entry('events'), { ...common('events'), PIER_EVENTS_HTTP_PORT: String(ports.events) }, `${urls.events}/healthz`, childOptions),
  ];
  for (const s of resources) {
    s.start(root);
    services.push(s);
  }
  await Promise.all(resources.map((s) => s.waitHealthy(90_000)));

  const auth = new ServiceProcess(
    'auth',
    entry('auth'),
    {
      ...common('auth'),
      PIER_IDENTITY_PRIVATE_KEY: state.identity.privateJwk,
      PIER_GATEWAY_SERVICE_PUBLIC_KEY: state.gatewayKeys.publicJwk,
      PIER_AUTH_HTTP_PORT: String(ports.authHttp),
      PIER_AUTH_GRPC_PORT: String(ports.authGrpc),
      PIER_PUBLIC_URL: urls.gateway,
      PIER_COMPUTE_URL: urls.compute,
      PIER_DATABASES_URL: urls.databases,
      PIER_SECRETS_URL: urls.secrets,
    },
    `${urls.auth}/healthz`,
    childOptions,
  );
  auth.start(root);
  services.push(auth);
  await auth.waitHealthy(90_000);

  const gateway = new ServiceProcess(
    'gateway',
    entry('gateway'),
    {
      ...env,
      PIER_GATEWAY_PORT: String(ports.gateway),
      PIER_GATEWAY_METRICS_PORT: String(ports.gatewayMetrics),
      PIER_BIND_HOST: host,
      PIER_NATS_URL: nats!.url,
      ...nats!.credentials('gateway'),
      PIER_GATEWAY_SERVICE_PRIVATE_KEY: state.gatewayKeys.privateJwk,
      PIER_AUTH_GRPC_URL: `127.0.0.1:${ports.authGrpc}`,
      PIER_AUTH_URL: urls.auth,
      PIER_COMPUTE_URL: urls.compute,
      PIER_DATABASES_URL: urls.databases,
      PIER_SECRETS_URL: urls.secrets,
      PIER_EVENTS_URL: urls.events,
      PIER_CONSOLE_DIR: consoleDir,
    },
    `${local(ports.gateway)}/healthz`,
    childOptions,
  );
  gateway.start(root);
  services.push(gateway);
  await gateway.waitHealthy(90_000);

  const configDir = env.PIER_CONFIG_DIR || path.join(os.homedir(), '.config', 'pier');
  const shown = configDir.startsWith(os.homedir()) ? '~' + configDir.slice(os.homedir().length) : configDir;
  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1);
  if (format === 'json') {
    process.stdout.write(
      lines.own(30, 'Pier is running', {
        api: `${urls.gateway}/api/v1`,
        ...(consoleDir === 'off' ? {} : { console: `${urls.gateway}/` }),
        credentials: path.join(configDir, 'credentials.json'),
        startedInSeconds: Number(seconds),
      }),
    );
  } else
    process.stdout.write(
      [
        '',
        `Pier is running (started in ${seconds}s).`,
        ...(consoleDir === 'off' ? [] : [`  Console:      ${urls.gateway}/   (sign in with the token in credentials.json, or an API key)`]),
        `  API:          ${urls.gateway}/api/v1   (description: ${urls.gateway}/api/v1/openapi.json)`,
        `  Credentials:  ${path.join(shown, 'credentials.json')} (api_url, token) and ${path.join(shown, 'config.json')} (workspace_id, vpc_id), mode 0600`,
        `  Try:          curl -H "Authorization: Bearer $(jq -r .token ${path.join(shown, 'credentials.json')})" ${urls.gateway}/api/v1/workspaces`,
        '  Stop:         Ctrl-C',
        '',
      ].join('\n') + '\n',
    );

  // A service that dies on its own takes the platform down with it: half a platform
  // answering 503s is harder to notice than a launcher that says what happened.
  const watch = setInterval(() => {
    const dead = services.find((s) => s.exited);
    if (dead && !stopping) {
      clearInterval(watch);
      say(`${dead.name} exited unexpectedly; stopping everything`);
      void shutdown(1);
    }
  }, 500);
  watch.unref();
}

async function shutdown(code: number): Promise<never> {
  stopping = true;
  say('stopping...');
  await stopAll().catch((err) => say(`error while stopping: ${(err as Error).message}`));
  say('stopped');
  process.exit(code);
}

let firstSignalAt = 0;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (stopping) {
      // A second Ctrl-C stops waiting. Wrappers (pnpm, tsx) may pass the first one on
      // again a moment later, so only a signal well after the first counts.
      if (Date.now() - firstSignalAt < 1000) return;
      for (const s of services) s.killNow();
      process.exit(130);
    }
    firstSignalAt = Date.now();
    void shutdown(0);
  });
}
process.on('exit', () => {
  for (const s of services) s.killNow();
});

main().catch(async (err: unknown) => {
  stopping = true;
  const message = `${err instanceof MissingDependency ? '' : 'failed: '}${(err as Error).message}`;
  process.stderr.write(format === 'json' ? lines.own(50, message) : `\npier: ${message}\n`);
  await stopAll().catch(() => undefined);
  process.exit(1);
});
