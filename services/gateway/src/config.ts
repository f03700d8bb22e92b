import { z } from 'zod';
import { loadConfig, logLevel, port } from '@pier/kit';

const url = (name: string) => z.string().url({ message: `${name} must be an http:// URL` });
// An empty variable means "not set": shells and compose files often export NAME= .
const optionalUrl = (name: string) => z.preprocess((v) => (v === '' ? undefined : v), url(name).optional());

/**
 * The gateway holds no state and no database: it needs where auth answers gRPC and where
 * each service serves HTTP. A service whose URL is unset is simply not routed, so a
 * deployment can grow service by service.
 */
export const gatewayEnv = z.object({
  PIER_GATEWAY_PORT: port(7100),
  PIER_BIND_HOST: z.string().default('127.0.0.1'),
  PIER_LOG_LEVEL: logLevel,
  PIER_AUTH_GRPC_URL: z.string().regex(/^[^\s/]+:\d+$/, "PIER_AUTH_GRPC_URL must be host:port of auth's gRPC server"),
  PIER_AUTH_URL: url('PIER_AUTH_URL'),
  PIER_COMPUTE_URL: optionalUrl('PIER_COMPUTE_URL'),
  PIER_DATABASES_URL: optionalUrl('PIER_DATABASES_URL'),
  PIER_SECRETS_URL: optionalUrl('PIER_SECRETS_URL'),
});

export type GatewayConfig = z.infer<typeof gatewayEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): GatewayConfig => loadConfig(gatewayEnv, env);
