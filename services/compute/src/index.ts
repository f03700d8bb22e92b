export { start } from './server.ts';
export { readConfig, computeEnv, type ComputeConfig } from './config.ts';
export { computeRoutes } from './app.ts';
