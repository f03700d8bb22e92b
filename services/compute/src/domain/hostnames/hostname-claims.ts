// Who holds a custom hostname. Attaching one is only a claim: claims of different services
// (any workspace) coexist, so no one can keep a name from the workspace that controls its DNS
// by attaching it first. The claim whose own TXT value DNS holds wins at verify: it becomes
// the one holder (a partial unique index on verified hostnames makes that so even for two
// verifications racing on two computes) and the other claims go. A claim never verified
// lapses after the configured lifetime; readers treat it as gone at once, and the expiry pass
// (claim-expiry.ts) removes it. Every claim removed is an event in its own workspace.
import { ConflictError } from '@pier/kit';
import type { ComputeContext } from '../context.ts';
import type { Hostname, HostnameStore, RemovedClaim } from './hostname-store-port.ts';
import { events } from '../events.ts';
import type { Service } from '../records.ts';

function taken(hostname: string, holder: Hostname, service: Service): ConflictError {
  // Whose domain it is stays unsaid when it is not this service's: another workspace's business.
  const where = holder.service_id === service.id ? 'this service holds it already' : 'another service verified it; it must be detached there first';
  return new ConflictError(`${hostname} is taken: ${where}`, 'hostname_taken');
}

async function tell(tx: HostnameStore, what: 'expired' | 'lost', removed: RemovedClaim[]): Promise<void> {
  for (const { owner, domain } of removed) await tx.writeEvent(events.domain(owner, what, domain));
}

/**
 * A new claim of `service` on `hostname`, lasting the configured lifetime: refused (409
 * `hostname_taken`) when a verified domain holds the name, or the service claims it already.
 */
export async function claimHostname(ctx: ComputeContext, service: Service, hostname: string, verificationToken: string): Promise<Hostname> {
  const now = ctx.now();
  const domain = await ctx.edge.store.transaction(async (tx) => {
    // A verification winning meanwhile would otherwise leave this claim beside its holder.
    await tx.lockHostname(hostname);
    const holder = await tx.hostnameHolder(hostname);
    if (holder) throw taken(hostname, holder, service);
    // The service's own lapsed claim on the name is gone already: its record makes way.
    await tell(tx, 'expired', await tx.removeLapsedClaims(now, { serviceId: service.id, hostname }));
    const d = await tx.insertHostname({
      workspace_id: service.workspace_id,
      vpc_id: service.vpc_id,
      service_id: service.id,
      hostname,
      verification_token: verificationToken,
      claim_expires_at: new Date(now.getTime() + ctx.edge.settings.claimTtlMs),
    });
    await tx.writeEvent(events.domain(service, 'added', d));
    return d;
  });
  ctx.eventsWritten();
  return domain;
}

/**
 * DNS proved `d`'s claimant controls the hostname: `d` becomes its holder and every other claim
 * on it goes (`service.domain.lost` in each claimant's workspace). A domain verified already
 * stays as it is. 409 `hostname_taken` when another service won first; undefined when `d`
 * itself is gone (lapsed, or lost to a verification that won meanwhile).
 */
export async function winClaim(ctx: ComputeContext, service: Service, d: Hostname): Promise<Hostname | undefined> {
  if (d.verified_at) return d;
  const now = ctx.now();
  const won = await ctx.edge.store.transaction(async (tx) => {
    await tx.lockHostname(d.hostname);
    const holder = await tx.hostnameHolder(d.hostname);
    if (holder && holder.id !== d.id) throw taken(d.hostname, holder, service);
    const mine = await tx.markVerified(d.id, now);
    if (mine) await tell(tx, 'lost', await tx.removeRivalClaims(d.hostname, d.id));
    return mine;
  });
  ctx.eventsWritten();
  return won;
}

/** Removes up to `limit` claims lapsed by `now`, each with its `service.domain.expired` event; how many went. */
export async function expireClaims(ctx: Pick<ComputeContext, 'edge' | 'eventsWritten'>, now: Date, limit: number): Promise<number> {
  const removed = await ctx.edge.store.transaction(async (tx) => {
    const gone = await tx.removeLapsedClaims(now, { limit });
    await tell(tx, 'expired', gone);
    return gone.length;
  });
  if (removed) ctx.eventsWritten();
  return removed;
}
