import { vpcUsageRoute, type Route } from '@pier/kit';
import type { ComputeContext } from './domain/context.ts';
import { countServices } from './domain/services.ts';
import { serviceRoutes } from './http/service-routes.ts';
import { rolloutRoutes } from './http/rollout-routes.ts';
import { envRoutes } from './http/env-routes.ts';

/** Every route compute serves, built from its dependencies (tests and the skeleton serve them). */
export function computeRoutes(ctx: ComputeContext): Route[] {
  return [...serviceRoutes(ctx), ...rolloutRoutes(ctx), ...envRoutes(ctx), vpcUsageRoute((vpcId) => countServices(ctx, vpcId))];
}
