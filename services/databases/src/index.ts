export { start, type StartOptions } from './server.ts';
export { readConfig, databasesEnv, type DatabasesConfig } from './config.ts';
export type { DatabaseCluster, ClusterRef } from './domain/cluster-port.ts';
export { databasesRoutes } from './app.ts';
