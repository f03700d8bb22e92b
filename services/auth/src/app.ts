import type { Knex, Route } from '@pier/kit';
import type { VpcUsage } from './domain/vpcs.ts';
import type { AnswerCaches } from './domain/answer-caches.ts';
import { ApiKeys } from './domain/api-keys.ts';
import { CliSessions } from './domain/cli-sessions.ts';
import { Members } from './domain/members.ts';
import { Vpcs } from './domain/vpcs.ts';
import { Workspaces } from './domain/workspaces.ts';
import { authRoutes } from './http/routes.ts';
import type { LastUsedRecorder } from './store/last-used.ts';
import { Store } from './store/store.ts';

export interface RouteDeps {
  db: Knex;
  usage: VpcUsage;
  lastUsed: LastUsedRecorder;
  caches: AnswerCaches;
}

/** Every REST route auth serves, built from its dependencies. */
export function authRestRoutes(deps: RouteDeps): Route[] {
  const store = new Store(deps.db);
  return authRoutes({
    workspaces: new Workspaces(store),
    members: new Members(store, deps.caches),
    vpcs: new Vpcs(store, deps.usage, deps.caches),
    apiKeys: new ApiKeys(store, deps.lastUsed, deps.caches),
    sessions: new CliSessions(store, deps.lastUsed, deps.caches),
  });
}
