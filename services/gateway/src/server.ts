import { close, createLogger, Drain, Lifecycle, listen, type Logger, type ReadinessChecks, type RunningService } from '@pier/kit';
import { createGatewayMetrics, internalHandler } from './http/metrics.ts';
import type { GatewayConfig } from './config.ts';
import { AuthClient } from './auth-client.ts';
import { IdempotencyOwners } from './idempotency-owners.ts';
import { AnswerCache, type Authenticates } from './answer-cache.ts';
import { createGateway } from './app.ts';
import type { Upstream } from './routing.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { answerClientError, GATEWAY_MAX_HEADER_BYTES } from './http/client-errors.ts';
import { ConsoleSignIn, consoleOidcSettings } from './http/console-sign-in.ts';
import { defaultConsoleDir } from './http/console.ts';

export interface GatewayOptions {
  /** Where log lines go (default stdout); tests capture the access log with it. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
}

/**
 * Starts the gateway: one gRPC channel to auth, one keep-alive pool per routed service.
 * It holds no database, so it takes the kit skeleton's lifecycle and listener rather than
 * startService.
 */
/** Auth's channel, and each routed service's /healthz, answer within the readiness bound. */
function readinessChecks(auth: AuthClient, upstreams: Map<Upstream, string>): ReadinessChecks {
  const checks: ReadinessChecks = { auth: () => auth.ready() };
  for (const [name, base] of upstreams) {
    if (name === 'auth') continue;
    checks[name] = async () => {
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error(`${name} answers /healthz with ${res.status}`);
    };
  }
  return checks;
}

export interface RunningGateway extends RunningService {
  /** Where /metrics, /healthz and /readyz answer (PIER_GATEWAY_METRICS_PORT). */
  metricsPort: number;
}

export async function start(config: GatewayConfig, options: GatewayOptions = {}): Promise<RunningGateway> {
  const logger = options.logger ?? createLogger('gateway', config.PIER_LOG_LEVEL, options.logDestination);
  const life = new Lifecycle(logger);
  try {
    const upstreams = new Map<Upstream, string>([['auth', config.PIER_AUTH_URL]]);
    if (config.PIER_COMPUTE_URL) upstreams.set('compute', config.PIER_COMPUTE_URL);
    if (config.PIER_DATABASES_URL) upstreams.set('databases', config.PIER_DATABASES_URL);
    if (config.PIER_SECRETS_URL) upstreams.set('secrets', config.PIER_SECRETS_URL);
    if (config.PIER_EVENTS_URL) upstreams.set('events', config.PIER_EVENTS_URL);
    const metrics = createGatewayMetrics();
    const auth = new AuthClient(config.PIER_AUTH_GRPC_URL, {
      serviceKey: config.PIER_GATEWAY_SERVICE_PRIVATE_KEY,
      timeoutMs: config.PIER_AUTH_TIMEOUT_MS,
      reconnectMaxMs: config.PIER_AUTH_RECONNECT_MAX_MS,
      observe: metrics.grpcClient,
    });
    life.onStop('auth client', () => auth.close());
    await auth.prepare();
    let answers: Authenticates = auth;
    if (config.PIER_AUTH_CACHE === 'on' && config.PIER_NATS_URL) {
      const cache = new AnswerCache(
        auth,
        { url: config.PIER_NATS_URL, user: config.PIER_NATS_USER, password: config.PIER_NATS_PASSWORD },
        logger,
        metrics.authCache,
        config.PIER_AUTH_CACHE_MAX_LEASE_MS,
      );
      cache.start();
      metrics.followCacheLease(() => cache.secondsLeft());
      life.onStop('auth answer cache', () => cache.stop());
      answers = cache;
    }
    const limits = {
      tokens: new RateLimiter({ perHour: config.PIER_RATE_LIMIT_TOKEN_PER_HOUR, burst: config.PIER_RATE_LIMIT_TOKEN_BURST }),
      addresses: new RateLimiter({ perHour: config.PIER_RATE_LIMIT_ADDRESS_PER_HOUR, burst: config.PIER_RATE_LIMIT_ADDRESS_BURST }),
      trustedHops: config.PIER_TRUSTED_PROXY_HOPS,
    };
    life.onStop('rate limiters', () => {
      limits.tokens.close();
      limits.addresses.close();
    });
    let keyClaims: IdempotencyOwners | undefined;
    if (config.PIER_NATS_URL) {
      keyClaims = new IdempotencyOwners({ url: config.PIER_NATS_URL, user: config.PIER_NATS_USER, password: config.PIER_NATS_PASSWORD }, logger);
      keyClaims.start();
      life.onStop('idempotency key owners', () => keyClaims!.stop());
    }
    const drain = new Drain();
    const consoleDir = config.PIER_CONSOLE_DIR === 'off' ? undefined : (config.PIER_CONSOLE_DIR ?? defaultConsoleDir());
    const gateway = createGateway({
      logger,
      auth: answers,
      upstreams,
      limits,
      upstreamTimeoutMs: config.PIER_UPSTREAM_TIMEOUT_MS,
      metrics,
      keyClaims,
      drain,
      consoleDir,
      consoleSignIn: new ConsoleSignIn(consoleOidcSettings(config), logger),
    });
    life.onStop('upstream pools', () => gateway.close());
    const { server, port } = await listen(gateway.handle, config.PIER_GATEWAY_PORT, config.PIER_BIND_HOST, { maxHeaderSize: GATEWAY_MAX_HEADER_BYTES });
    server.on('upgrade', gateway.upgrade);
    server.on('clientError', answerClientError);
    const internal = await listen(
      internalHandler(metrics, readinessChecks(auth, upstreams), drain),
      config.PIER_GATEWAY_METRICS_PORT,
      config.PIER_BIND_HOST,
    ).catch(async (err: unknown) => {
      // A failed start leaves no listener behind (the public one is registered below).
      await close(server);
      throw err;
    });
    life.onStop('metrics server', () => close(internal.server));
    // A stop's first step (kit's drain.ts): out of the endpoints (the internal port, stopped
    // after this, answers 503 `draining`), streams and sockets told to reconnect, requests in
    // flight finished.
    life.onStop('HTTP server', () => drain.run(server, { delayMs: config.PIER_SHUTDOWN_DELAY_MS, graceMs: config.PIER_SHUTDOWN_GRACE_MS }, logger));
    logger.info({ port, metricsPort: internal.port, routed: [...upstreams.keys()] }, 'gateway listening');
    return { name: 'gateway', httpPort: port, metricsPort: internal.port, stop: () => life.stopAll() };
  } catch (err) {
    await life.stopAll();
    throw err;
  }
}
