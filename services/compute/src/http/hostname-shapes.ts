// The JSON of a custom domain, and the schemas that document it in OpenAPI.
import { isIP } from 'node:net';
import { z } from 'zod';
import { HOSTNAME_STATUSES, TLS_STATUSES, type Hostname } from '../domain/hostnames/hostname-store-port.ts';
import { CHALLENGE_PREFIX, isApex, verificationValue } from '../domain/hostnames/hostnames.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

const dnsRecord = z.object({ type: z.enum(['TXT', 'CNAME', 'A', 'AAAA']), name: z.string(), value: z.string() });

export const hostnameSchema = z.object({
  id: z.string(),
  service_id: z.string(),
  hostname: z.string().describe('Lowercase; an internationalised name is shown as punycode (xn--...)'),
  status: z
    .enum(HOSTNAME_STATUSES)
    .describe(
      'pending: waiting for verify; verified: DNS checked out and the hostname routes, the certificate is on its way; active: served over HTTPS; failed: see `error`',
    ),
  verification: dnsRecord.describe('The TXT record proving the domain is yours'),
  routing: z
    .array(dnsRecord)
    .describe(
      "The record(s) that send the hostname to the service: a CNAME to the service's host, or for an apex (example.com) A/AAAA records to the edge's addresses",
    ),
  tls: z.object({
    status: z.enum(TLS_STATUSES),
    issuer: z.string().nullable(),
    expires_at: z.string().nullable(),
    error: z.string().nullable().describe('Why the last issuance or renewal failed'),
  }),
  verified_at: z
    .string()
    .nullable()
    .describe('When DNS first proved the hostname yours: from then on this domain alone holds it. Null while it is a pending claim'),
  claim_expires_at: z
    .string()
    .nullable()
    .describe(
      'A claim not yet verified lapses then and is removed; until it is verified, other services may claim the hostname too, and the first to verify wins. Null once verified',
    ),
  last_checked_at: z.string().nullable().describe('When DNS was last checked (by verify)'),
  error: z.string().nullable().describe('What DNS or the certificate authority answered, with what was expected and what was found'),
  created_at: z.string(),
  updated_at: z.string(),
});

export interface RoutingTargets {
  /** The service's own host (a CNAME's target). */
  serviceHost: string;
  /** The edge's addresses (an apex's A/AAAA records). */
  edgeAddresses: string[];
}

export function hostnameJson(d: Hostname, targets: RoutingTargets): z.infer<typeof hostnameSchema> {
  const routing = isApex(d.hostname)
    ? targets.edgeAddresses.map((a) => ({ type: isIP(a) === 6 ? ('AAAA' as const) : ('A' as const), name: d.hostname, value: a }))
    : [{ type: 'CNAME' as const, name: d.hostname, value: targets.serviceHost }];
  return {
    id: d.id,
    service_id: d.service_id,
    hostname: d.hostname,
    status: d.status,
    verification: { type: 'TXT', name: `${CHALLENGE_PREFIX}.${d.hostname}`, value: verificationValue(d) },
    routing,
    tls: { status: d.tls_status, issuer: d.tls_issuer, expires_at: iso(d.tls_expires_at), error: d.tls_error },
    verified_at: iso(d.verified_at),
    claim_expires_at: iso(d.claim_expires_at),
    last_checked_at: iso(d.last_checked_at),
    error: d.error,
    created_at: iso(d.created_at)!,
    updated_at: iso(d.updated_at)!,
  };
}
