import { createServiceApp, vpcUsageRoute, type IdentityVerifier, type Logger } from '@pier/kit';
import type { Express } from 'express';
import type { Secrets } from './domain/secrets.ts';
import { secretRoutes } from './http/secret-routes.ts';

export interface AppDeps {
  logger: Logger;
  verifier: IdentityVerifier;
  secrets: Secrets;
  /** Records of the VPC in any state, for auth's "is this VPC empty" question. */
  countInVpc(vpcId: string): Promise<number>;
  health(): Promise<void>;
}

/** The HTTP app, built from its dependencies without listening. */
export function buildApp(deps: AppDeps): Express {
  return createServiceApp({
    service: 'secrets',
    logger: deps.logger,
    verifier: deps.verifier,
    routes: [...secretRoutes(deps.secrets), vpcUsageRoute(deps.countInVpc)],
    health: deps.health,
  });
}
