import { vpcUsageRoute, type Route, type UpgradeRoute } from '@pier/kit';
import type { ComputeContext } from './domain/context.ts';
import { countServices } from './domain/services/services.ts';
import { serviceRoutes } from './http/service-routes.ts';
import { rolloutRoutes } from './http/rollout-routes.ts';
import { envRoutes } from './http/env-routes.ts';
import { buildRoutes } from './http/build-routes.ts';
import { logRoutes } from './http/log-routes.ts';
import { execRoutes } from './http/exec-routes.ts';
import { hostnameRoutes } from './http/hostname-routes.ts';
import { uptimeRoutes } from './http/uptime-routes.ts';
import { diskBackupRoutes } from './http/disk-backup-routes.ts';
import { metricsRoutes } from './http/metrics-routes.ts';
import type { ShellLimits } from './domain/exec/exec.ts';

/** Every route compute serves, built from its dependencies (tests and the skeleton serve them). */
export function computeRoutes(ctx: ComputeContext): Route[] {
  return [
    ...serviceRoutes(ctx),
    ...rolloutRoutes(ctx),
    ...envRoutes(ctx),
    ...buildRoutes(ctx),
    ...logRoutes(ctx),
    ...hostnameRoutes(ctx),
    ...uptimeRoutes(ctx),
    ...diskBackupRoutes(ctx),
    ...metricsRoutes(ctx),
    vpcUsageRoute((vpcId) => countServices(ctx, vpcId)),
  ];
}

/** Compute's WebSocket routes (a shell in a replica). */
export function computeUpgrades(ctx: ComputeContext, limits: ShellLimits): UpgradeRoute[] {
  return execRoutes(ctx, limits);
}
