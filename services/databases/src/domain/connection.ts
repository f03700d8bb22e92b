// GET connection: the endpoints the cluster routes and the live credentials, read from
// the cluster each time (passwords are never stored on Pier's side).
import type { Credentials, Endpoints } from './cluster-port.ts';
import type { Engine } from './database.ts';
import { databaseDeleting } from './errors.ts';
import { activeCidrs, clusterView, type DatabasesContext, type Scope } from './context.ts';
import { getDatabase } from './status-refresh.ts';

/** Where clients outside the platform connect; null while external access is off (or has no address yet). */
export interface ExternalEndpoint {
  host: string;
  hostRo: string;
  port: number;
  /** The read-only endpoint's port: a replica's, or the primary's when there is none. */
  portRo: number;
}

export interface ConnectionDetails {
  engine: Engine;
  shortId: string;
  endpoints: Endpoints;
  credentials: Credentials;
  external: ExternalEndpoint | null;
}

/**
 * With an external domain configured, the names the spec shapes (`<short_id>.<domain>`,
 * which a wildcard DNS record points at the cluster); without one, the address the cluster
 * itself reports, so the details work as they stand on a machine with no DNS of ours.
 */
export function externalEndpoint(shortId: string, enabled: boolean, endpoints: Endpoints, domain: string | undefined): ExternalEndpoint | null {
  if (!enabled || endpoints.externalPort === undefined) return null;
  const ports = { port: endpoints.externalPort, portRo: endpoints.externalPortRo ?? endpoints.externalPort };
  if (domain) return { host: `${shortId}.${domain}`, hostRo: `${shortId}-ro.${domain}`, ...ports };
  if (!endpoints.externalAddress) return null;
  return { host: endpoints.externalAddress, hostRo: endpoints.externalAddressRo ?? endpoints.externalAddress, ...ports };
}

export async function connectionOf(ctx: DatabasesContext, scope: Scope, id: string): Promise<ConnectionDetails> {
  const db = await getDatabase(ctx, scope, id);
  if (db.status === 'deleting') throw databaseDeleting();
  const { endpoints, credentials } = await ctx.cluster.connection(clusterView(db, await activeCidrs(ctx, db.id)));
  const external = externalEndpoint(db.shortId, db.externalAccessEnabled, endpoints, ctx.domains[db.engine]);
  return { engine: db.engine, shortId: db.shortId, endpoints, credentials, external };
}
