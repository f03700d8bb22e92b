export { start } from './server.ts';
export { readConfig, computeEnv, type ComputeConfig } from './config.ts';
export { computeRoutes, computeUpgrades } from './app.ts';
