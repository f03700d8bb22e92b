export { start, type GatewayOptions, type RunningGateway } from './server.ts';
export { readConfig, gatewayEnv, type GatewayConfig } from './config.ts';
export { routeOf, type RouteTarget, type Upstream } from './routing.ts';
export { ACCESS_TOKEN_PARAM, mergeOpenApi, type Paths } from './http/openapi.ts';
export { AuthClient, AUTH_RECONNECT_MAX_MS, AUTH_TIMEOUT_MS, type Authenticated } from './auth-client.ts';
