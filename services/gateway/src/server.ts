import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { close, createLogger, type Logger, type RunningService } from '@pier/kit';
import type { GatewayConfig } from './config.ts';
import { AuthClient } from './auth-client.ts';
import { createGateway } from './app.ts';
import type { Upstream } from './routing.ts';

export interface GatewayOptions {
  /** Where log lines go (default stdout); tests capture the access log with it. */
  logDestination?: NodeJS.WritableStream;
  logger?: Logger;
}

/** Starts the gateway: one gRPC channel to auth, one keep-alive pool per routed service. */
export async function start(config: GatewayConfig, options: GatewayOptions = {}): Promise<RunningService> {
  const logger = options.logger ?? createLogger('gateway', config.PIER_LOG_LEVEL, options.logDestination);
  const upstreams = new Map<Upstream, string>([['auth', config.PIER_AUTH_URL]]);
  if (config.PIER_COMPUTE_URL) upstreams.set('compute', config.PIER_COMPUTE_URL);
  if (config.PIER_DATABASES_URL) upstreams.set('databases', config.PIER_DATABASES_URL);
  if (config.PIER_SECRETS_URL) upstreams.set('secrets', config.PIER_SECRETS_URL);
  const auth = new AuthClient(config.PIER_AUTH_GRPC_URL);
  const gateway = createGateway({ logger, auth, upstreams });
  // Longer keep-alive than the load balancers usually in front (60 s), as the services do.
  const server = http.createServer({ keepAliveTimeout: 65_000 }, gateway.handle);
  server.on('upgrade', gateway.upgrade);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PIER_GATEWAY_PORT, config.PIER_BIND_HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, routed: [...upstreams.keys()] }, 'gateway listening');
  return {
    name: 'gateway',
    httpPort: port,
    async stop() {
      await close(server);
      gateway.close();
      auth.close();
    },
  };
}
