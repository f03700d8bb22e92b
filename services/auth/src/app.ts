import type { Route } from '@pier/kit';
import type { AuthContext } from './domain/context.ts';
import { apiKeyRoutes } from './http/api-key-routes.ts';
import { cliSessionRoutes } from './http/cli-session-routes.ts';
import { meRoutes } from './http/me-routes.ts';
import { memberRoutes } from './http/member-routes.ts';
import { vpcRoutes } from './http/vpc-routes.ts';
import { workspaceRoutes } from './http/workspace-routes.ts';

/** Every REST route auth serves, built from its context (the SDK's OpenAPI document describes them too). */
export function authRestRoutes(ctx: AuthContext): Route[] {
  return [...meRoutes(), ...workspaceRoutes(ctx), ...memberRoutes(ctx), ...vpcRoutes(ctx), ...apiKeyRoutes(ctx), ...cliSessionRoutes(ctx)];
}
