import type { Express } from 'express';
import { createServiceApp, vpcUsageRoute, type IdentityVerifier, type Logger } from '@pier/kit';
import type { ComputeContext } from './domain/context.ts';
import { countServices } from './domain/services.ts';
import { serviceRoutes } from './http/service-routes.ts';
import { rolloutRoutes } from './http/rollout-routes.ts';
import { envRoutes } from './http/env-routes.ts';

/** compute's HTTP app from its dependencies, without listening (tests drive it directly). */
export function createComputeApp(ctx: ComputeContext, verifier: IdentityVerifier, logger: Logger, health: () => Promise<void>): Express {
  return createServiceApp({
    service: 'compute',
    logger,
    verifier,
    routes: [...serviceRoutes(ctx), ...rolloutRoutes(ctx), ...envRoutes(ctx), vpcUsageRoute((vpcId) => countServices(ctx, vpcId))],
    health,
  });
}
