import { vpcUsageRoute, type Route } from '@pier/kit';
import type { DatabasesContext } from './domain/context.ts';
import { countDatabases } from './domain/status-refresh.ts';
import { databaseRoutes } from './http/routes.ts';
import { backupRoutes } from './http/backup-routes.ts';
import { engineRoutes } from './http/engine-routes.ts';

/** Every route the databases service serves, built from its dependencies. */
export function databasesRoutes(ctx: DatabasesContext): Route[] {
  return [...databaseRoutes(ctx), ...backupRoutes(ctx), ...engineRoutes(ctx), vpcUsageRoute((vpcId) => countDatabases(ctx, vpcId))];
}
