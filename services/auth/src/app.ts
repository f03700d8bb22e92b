import { createServiceApp, type IdentityVerifier, type Knex, type Logger } from '@pier/kit';
import type { Express } from 'express';
import type { VpcUsage } from './domain/vpcs.ts';
import { ApiKeys } from './domain/api-keys.ts';
import { CliSessions } from './domain/cli-sessions.ts';
import { Members } from './domain/members.ts';
import { Vpcs } from './domain/vpcs.ts';
import { Workspaces } from './domain/workspaces.ts';
import { authRoutes } from './http/routes.ts';
import type { LastUsedRecorder } from './store/last-used.ts';
import { Store } from './store/store.ts';

export interface AppDeps {
  db: Knex;
  logger: Logger;
  verifier: IdentityVerifier;
  usage: VpcUsage;
  lastUsed: LastUsedRecorder;
}

/** The REST app from its dependencies, without listening: tests drive it with supertest. */
export function createAuthApp(deps: AppDeps): Express {
  const store = new Store(deps.db);
  const routes = authRoutes({
    workspaces: new Workspaces(store),
    members: new Members(store),
    vpcs: new Vpcs(store, deps.usage),
    apiKeys: new ApiKeys(store, deps.lastUsed),
    sessions: new CliSessions(store, deps.lastUsed),
  });
  return createServiceApp({
    service: 'auth',
    logger: deps.logger,
    verifier: deps.verifier,
    routes,
    health: async () => {
      await deps.db.raw('select 1');
    },
  });
}
