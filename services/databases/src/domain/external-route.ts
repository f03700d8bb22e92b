// Whether a client outside may reach a database through Pier's SNI listener, and where:
// the listener (edge/postgres-listener.ts) asks on every connection, with the client's
// own address, which the database server never sees. The same rules the engine applies
// to external clients (access.ts): external access on, and the allowlist (when it has
// rules) listing the address.
import { admitsExternal } from './access.ts';
import { activeCidrs, refOf, type DatabasesContext } from './context.ts';
import type { ClusterRef } from './cluster-port.ts';

export interface ServerAddress {
  host: string;
  port: number;
}

/** The cluster's side: the address of a database's server, or of a replica for reads. */
export type ServerLocator = (db: ClusterRef, readOnly: boolean) => Promise<ServerAddress | null>;

export async function externalRoute(
  ctx: Pick<DatabasesContext, 'store'>,
  locate: ServerLocator,
  shortId: string,
  readOnly: boolean,
  clientAddress: string,
): Promise<{ target: ServerAddress } | { refused: string }> {
  const db = await ctx.store.byShortId(shortId);
  if (!db || db.engine !== 'postgresql') return { refused: 'no such database' };
  // A database in `error` may still serve (a replica failed); one being made or deleted does not.
  if (db.status === 'creating' || db.status === 'deleting') return { refused: `the database is ${db.status}` };
  const rules = await activeCidrs(ctx, db.id);
  if (!admitsExternal({ externalAccess: db.externalAccessEnabled, rules }, clientAddress)) {
    return { refused: db.externalAccessEnabled ? 'the address is not on the IP allowlist' : 'external access is off' };
  }
  const target = await locate(refOf(db), readOnly);
  return target ? { target } : { refused: 'the database server does not run' };
}
