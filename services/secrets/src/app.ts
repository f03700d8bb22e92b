import { vpcUsageRoute, type Route } from '@pier/kit';
import type { SecretsContext } from './domain/context.ts';
import { countSecrets } from './domain/read-secrets.ts';
import { secretRoutes } from './http/secret-routes.ts';

/** Every route secrets serves, built from its context (tests and the OpenAPI document serve them too). */
export function secretsRoutes(ctx: SecretsContext): Route[] {
  return [...secretRoutes(ctx), vpcUsageRoute((vpcId) => countSecrets(ctx, vpcId))];
}
