// The routing table: what the edge must serve, read from our records (never from the edge),
// so a sync after any change, a crash or a lost edge container converges on the same thing.
import type { EdgeRoute } from './edge-port.ts';
import type { Hostname } from '../hostnames/hostname-store-port.ts';
import type { EdgeDeps } from './edge-deps.ts';
import { serviceHost } from '../hostnames/hostname-format.ts';
import type { ComputeContext } from '../context.ts';

export interface TableChange {
  /** Route this domain as if it were stored routed (verify routes before it commits). */
  add?: Hostname;
  /** Leave this domain out (remove unroutes before it deletes). */
  drop?: string;
}

export async function routingTable(edge: EdgeDeps, change: TableChange = {}): Promise<EdgeRoute[]> {
  const [services, stored] = await Promise.all([edge.store.routableServices(), edge.store.routedHostnames()]);
  const domains = stored.filter((d) => d.id !== change.drop && d.id !== change.add?.id);
  if (change.add) domains.push(change.add);
  const byService = new Map<string, Hostname[]>();
  for (const d of domains) (byService.get(d.service_id) ?? byService.set(d.service_id, []).get(d.service_id)!).push(d);
  return services.map((s) => {
    const mine = byService.get(s.id) ?? [];
    return {
      workspaceId: s.workspace_id,
      vpcId: s.vpc_id,
      serviceId: s.id,
      serviceName: s.name,
      port: s.port!,
      serviceHost: serviceHost(s, edge.settings.appsDomain),
      customHosts: mine.map((d) => d.hostname),
      tlsHosts: mine.filter((d) => d.tls_status === 'issued').map((d) => d.hostname),
      // The elastic controller manages it (domain/elastic): only the activator can wake or count it.
      activator: s.desired_replicas != null ? { healthPath: s.health_check_path } : null,
    };
  });
}

/** The route of one service in a table (its custom hosts as the table has them). */
export function routeOf(table: EdgeRoute[], serviceId: string): EdgeRoute | undefined {
  return table.find((r) => r.serviceId === serviceId);
}

/**
 * Pushes the table to the edge, one push at a time (the worker's too), the table read in
 * its turn, and `then` (the write that stores the change) done before the next turn. So a
 * push never undoes a newer change, as a table read before a change and pushed after it
 * would: a removed hostname routed again, or a verified one dropped, until the next pass.
 */
export async function syncEdge<T>(ctx: ComputeContext, change: TableChange = {}, then?: () => Promise<T>, onTurn?: () => void): Promise<T | undefined> {
  const edge = ctx.edge.port;
  if (!edge) return then?.();
  return ctx.locks.run('edge:table', async () => {
    onTurn?.();
    await edge.sync(await routingTable(ctx.edge, change));
    return then?.();
  });
}
