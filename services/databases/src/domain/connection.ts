// GET connection: the endpoints the cluster routes and the live credentials, read from
// the cluster each time (passwords are never stored on Pier's side).
import type { Credentials, Endpoints } from './cluster-port.ts';
import type { Engine } from './database.ts';
import { databaseDeleting } from './errors.ts';
import { activeCidrs, clusterView, type DatabasesContext, type ExternalDomains, type Scope } from './context.ts';
import { getDatabase } from './live-status.ts';

export interface ConnectionDetails {
  engine: Engine;
  shortId: string;
  externalAccessEnabled: boolean;
  endpoints: Endpoints;
  credentials: Credentials;
  domains: ExternalDomains;
}

export async function connectionOf(ctx: DatabasesContext, scope: Scope, id: string): Promise<ConnectionDetails> {
  const db = await getDatabase(ctx, scope, id);
  if (db.status === 'deleting') throw databaseDeleting();
  const { endpoints, credentials } = await ctx.cluster.connection(clusterView(db, await activeCidrs(ctx, db.id)));
  return { engine: db.engine, shortId: db.shortId, externalAccessEnabled: db.externalAccessEnabled, endpoints, credentials, domains: ctx.domains };
}
