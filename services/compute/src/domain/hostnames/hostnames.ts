// Custom domains: attach a hostname to a web service, prove it with DNS (a TXT record and a
// record that routes to the edge), then route it and get it a certificate over ACME. Attaching
// is only a claim; the verified domain alone holds the hostname (hostname-claims.ts).
//
// The order keeps our records honest, as rollouts do: the edge is changed first (with the
// table as it will be), then one transaction records the outcome and its event. An edge
// that cannot be reached is a 503 with nothing written, but for a verify's hold on the
// hostname, which DNS proved and which stands (verify again once the edge answers).
import { randomBytes } from 'node:crypto';
import { ConflictError, NotFoundError, UnavailableError, isUuid, type Page, type PageRequest } from '@pier/kit';
import { claimHostname, winClaim } from './hostname-claims.ts';
import { findMutable, findService, type ComputeContext } from '../context.ts';
import type { Hostname, HostnamePatch } from './hostname-store-port.ts';
import type { EdgePort } from '../edge/edge-port.ts';
import { DnsUnavailableError } from './dns-port.ts';
import { routeOf, routingTable, syncEdge } from '../edge/edge-table.ts';
import { events } from '../events.ts';
import { isRouted, normalizeHostname, serviceHost } from './hostname-format.ts';
import type { Scope, Service } from '../records.ts';

/** The TXT record proving ownership is `<prefix>.<hostname>`. */
export const CHALLENGE_PREFIX = '_pier-challenge';

export function verificationValue(d: Pick<Hostname, 'verification_token'>): string {
  return `pier-verify=${d.verification_token}`;
}

/** A hostname of two labels (example.com) is taken for an apex, which cannot hold a CNAME. */
export function isApex(hostname: string): boolean {
  return hostname.split('.').length === 2;
}

function domainNotFound(): NotFoundError {
  return new NotFoundError('domain not found', 'domain_not_found');
}

function edgeOf(ctx: ComputeContext): EdgePort {
  if (!ctx.edge.port) throw new UnavailableError('custom domains need the edge, which is turned off on this platform (PIER_EDGE=off)', 'edge_unavailable');
  return ctx.edge.port;
}

async function findHostname(ctx: ComputeContext, service: Service, id: string): Promise<Hostname> {
  if (!isUuid(id)) throw domainNotFound();
  const d = await ctx.edge.store.findHostname(service.id, id.toLowerCase(), ctx.now());
  if (!d) throw domainNotFound();
  return d;
}

export async function listHostnames(
  ctx: ComputeContext,
  scope: Scope,
  serviceId: string,
  page: PageRequest,
): Promise<{ service: Service; page: Page<Hostname> }> {
  const service = await findService(ctx, scope, serviceId);
  return { service, page: await ctx.edge.store.listHostnames(service.id, page, ctx.now()) };
}

export async function addHostname(
  ctx: ComputeContext,
  scope: Scope,
  serviceId: string,
  input: { hostname: string },
): Promise<{ service: Service; domain: Hostname }> {
  edgeOf(ctx);
  const service = await findMutable(ctx, scope, serviceId);
  if (!isRouted(service)) {
    throw new ConflictError(`custom domains route to web services with a port; ${service.name} is a ${service.service_type} service`, 'service_not_routed');
  }
  const hostname = normalizeHostname(input.hostname, ctx.edge.settings.appsDomain);
  const max = ctx.edge.settings.maxDomainsPerService;
  // Serialised per service, so two attaches cannot both pass the cap.
  const domain = await ctx.locks.run(`domains:${service.id}`, async () => {
    if ((await ctx.edge.store.countHostnames(service.id, ctx.now())) >= max) {
      throw new ConflictError(`a service holds at most ${max} custom domains; detach one first`, 'domain_limit');
    }
    // Random per claim: a claimant can only verify with a TXT value no other claim has.
    return claimHostname(ctx, service, hostname, randomBytes(16).toString('hex'));
  });
  return { service, domain };
}

/** What DNS holds for the domain, as sentences naming what was expected and what was found; [] when it checks out. */
async function dnsProblems(ctx: ComputeContext, edge: EdgePort, service: Service, d: Hostname): Promise<string[]> {
  const dns = ctx.edge.dns;
  const txtName = `${CHALLENGE_PREFIX}.${d.hostname}`;
  const expected = verificationValue(d);
  const host = serviceHost(service, ctx.edge.settings.appsDomain);
  try {
    const [txt, cname] = await Promise.all([dns.txt(txtName), dns.cname(d.hostname)]);
    const problems: string[] = [];
    if (!txt.includes(expected)) {
      problems.push(`TXT ${txtName}: expected "${expected}", found ${txt.length ? txt.map((t) => JSON.stringify(t)).join(', ') : 'no TXT record'}`);
    }
    if (cname !== null) {
      if (cname !== host) problems.push(`routing: expected CNAME ${d.hostname} -> ${host}, found CNAME ${d.hostname} -> ${cname}`);
      return problems;
    }
    const [found, edgeAddresses] = await Promise.all([dns.addresses(d.hostname), edge.addresses()]);
    const expectedRouting = `CNAME ${d.hostname} -> ${host} (or A/AAAA ${d.hostname} -> ${edgeAddresses.join(', ') || 'the edge'})`;
    if (!found.length) problems.push(`routing: expected ${expectedRouting}, found no CNAME, A or AAAA record`);
    else if (found.some((a) => !edgeAddresses.includes(a))) problems.push(`routing: expected ${expectedRouting}, found A/AAAA ${found.join(', ')}`);
    return problems;
  } catch (err) {
    if (err instanceof DnsUnavailableError) throw new UnavailableError(`${err.message}; nothing was changed, retry shortly`, 'dns_unavailable');
    throw err;
  }
}

async function record(ctx: ComputeContext, service: Service, before: Hostname, patch: HostnamePatch): Promise<Hostname> {
  const after = await ctx.edge.store.transaction(async (tx) => {
    const d = await tx.updateHostname(before.id, patch);
    if (d.status !== before.status && d.status !== 'pending') await tx.writeEvent(events.domain(service, d.status, d));
    return d;
  });
  ctx.eventsWritten();
  return after;
}

/**
 * Re-checks DNS; when it checks out, routes the hostname and obtains its certificate. The
 * answer is the domain as it now stands: `active`, `verified` (a certificate on its way, on
 * kubernetes), or `failed` with `error` saying what DNS or the CA answered.
 */
export async function verifyHostname(ctx: ComputeContext, scope: Scope, serviceId: string, domainId: string): Promise<{ service: Service; domain: Hostname }> {
  const edge = edgeOf(ctx);
  const service = await findMutable(ctx, scope, serviceId);
  const { id } = await findHostname(ctx, service, domainId);
  const domain = await ctx.locks.run(`domain:${id}`, async () => {
    const d = await findHostname(ctx, service, id);
    const now = ctx.now();
    const problems = await dnsProblems(ctx, edge, service, d);
    if (problems.length) {
      // DNS no longer points here: stop routing the name before saying so.
      const failed = { status: 'failed', routed: false, error: problems.join('; '), last_checked_at: now } as const;
      if (!d.routed) return record(ctx, service, d, failed);
      return (await syncEdge(ctx, { drop: d.id }, () => record(ctx, service, d, failed)))!;
    }
    // Held before it is routed: the edge never routes a name two services claim.
    const held = await winClaim(ctx, service, d);
    if (!held) throw domainNotFound();
    const routed = { status: held.status === 'active' ? 'active' : 'verified', routed: true, error: null, last_checked_at: now } as const;
    const verified = (await syncEdge(ctx, { add: { ...held, routed: true } }, () => record(ctx, service, held, routed)))!;
    return verified.status === 'active' ? verified : certify(ctx, service, verified);
  });
  return { service, domain };
}

/**
 * Obtains (or renews) the certificate of a routed domain and records the outcome; an issued
 * one is then served. A renewal that fails keeps the certificate in place until it expires.
 */
export async function certify(ctx: ComputeContext, service: Service, d: Hostname): Promise<Hostname> {
  const edge = edgeOf(ctx);
  const route = routeOf(await routingTable(ctx.edge), service.id);
  if (!route) return d;
  const outcome = await edge.certify(route, d.hostname);
  if (outcome.status === 'issued') {
    const after = await record(ctx, service, d, {
      status: 'active',
      tls_status: 'issued',
      tls_issuer: outcome.issuer,
      tls_expires_at: outcome.expiresAt,
      tls_error: null,
      error: null,
    });
    await syncEdge(ctx);
    return after;
  }
  if (outcome.status === 'pending') return record(ctx, service, d, { status: 'verified', tls_status: 'pending', tls_error: null });
  const stillValid = d.tls_status === 'issued' && d.tls_expires_at !== null && new Date(d.tls_expires_at) > ctx.now();
  if (stillValid) return record(ctx, service, d, { tls_error: `renewal failed: ${outcome.error}` });
  return record(ctx, service, d, { status: 'failed', tls_status: 'failed', tls_error: outcome.error, error: outcome.error });
}

export async function removeHostname(ctx: ComputeContext, scope: Scope, serviceId: string, domainId: string): Promise<void> {
  const edge = edgeOf(ctx);
  const service = await findMutable(ctx, scope, serviceId);
  const { id } = await findHostname(ctx, service, domainId);
  await ctx.locks.run(`domain:${id}`, async () => {
    const d = await findHostname(ctx, service, id);
    // Stored unrouted in the same turn: a later push leaves it out too.
    if (d.routed) await syncEdge(ctx, { drop: d.id }, () => ctx.edge.store.updateHostname(d.id, { routed: false }));
    await edge.removeCertificate({ vpcId: service.vpc_id, serviceName: service.name }, d.hostname);
    await ctx.edge.store.transaction(async (tx) => {
      await tx.deleteHostname(d.id);
      await tx.writeEvent(events.domain(service, 'removed', d));
    });
  });
  ctx.eventsWritten();
}

/** A deleted service's domains: unrouted (the service is out of the table already), certificates removed, records gone. */
export async function releaseHostnames(ctx: ComputeContext, service: Service): Promise<void> {
  const edge = ctx.edge.port;
  if (!edge) return;
  await syncEdge(ctx);
  const gone = await ctx.edge.store.deleteServiceHostnames(service.id);
  for (const d of gone) await edge.removeCertificate({ vpcId: service.vpc_id, serviceName: service.name }, d.hostname);
}
