export { start, type RunningAuth, type StartOptions } from './server.ts';
export { readConfig, authEnv, type AuthConfig } from './config.ts';
export type { BootstrapResult } from './bootstrap/bootstrap.ts';
export { authRestRoutes } from './app.ts';
export type { AuthContext } from './domain/context.ts';
