import { vpcUsageRoute, type Route } from '@pier/kit';
import type { Secrets } from './domain/secrets.ts';
import { secretRoutes } from './http/secret-routes.ts';

/**
 * Every route secrets serves. `countInVpc` counts records in any state, for auth's "is
 * this VPC empty" question: a pending one still occupies the VPC.
 */
export function secretsRoutes(secrets: Secrets, countInVpc: (vpcId: string) => Promise<number>): Route[] {
  return [...secretRoutes(secrets), vpcUsageRoute(countInVpc)];
}
