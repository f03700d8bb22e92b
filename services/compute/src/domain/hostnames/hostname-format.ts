// Host names: the one every web service gets under the platform's apps domain, and the
// custom ones users attach (validated and normalised here, so the store, the DNS checks and
// the edge all see the same ASCII form).
import { domainToASCII } from 'node:url';
import { InputError } from '@pier/kit';
import type { Service } from '../records.ts';

/** `<name>-<first 8 hex of the id>.<apps domain>`: unique without a lookup, and stable for the service's life. */
export function serviceHost(s: Pick<Service, 'id' | 'name'>, appsDomain: string): string {
  return `${s.name}-${s.id.slice(0, 8)}.${appsDomain}`;
}

/** Whether the service answers on the edge at all: web services with a port. */
export function isRouted(s: Pick<Service, 'service_type' | 'port'>): boolean {
  return s.service_type === 'web' && s.port !== null;
}

/** The service's public URL, or null for a service the edge does not route (a worker, a cron job). */
export function serviceUrl(s: Pick<Service, 'id' | 'name' | 'service_type' | 'port'>, appsDomain: string | null): string | null {
  return appsDomain && isRouted(s) ? `https://${serviceHost(s, appsDomain)}` : null;
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function invalid(message: string, code = 'invalid_hostname'): InputError {
  return new InputError(message, code, { field: 'hostname' });
}

/**
 * A custom hostname as stored: lowercase, internationalised labels as punycode (IDNA), no
 * trailing dot. Refused: wildcards (a certificate per name is issued over HTTP-01, which
 * cannot prove a wildcard), IP addresses, single labels, and names under the apps domain
 * (those belong to the platform's own services).
 */
export function normalizeHostname(input: string, appsDomain: string): string {
  const raw = input.trim().replace(/\.$/, '');
  if (raw.startsWith('*'))
    throw invalid('wildcard domains are not supported: attach each hostname (www.example.com, api.example.com, ...)', 'wildcard_not_supported');
  if (/[/:@\s]/.test(raw)) throw invalid('hostname must be a bare host name such as www.example.com (no scheme, port, path or spaces)');
  const ascii = domainToASCII(raw.toLowerCase());
  if (!ascii) throw invalid(`hostname ${JSON.stringify(input)} is not a valid domain name`);
  if (ascii.length > 253) throw invalid('hostname must be at most 253 characters');
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid('hostname must be a fully qualified domain name such as www.example.com');
  if (!labels.every((l) => LABEL.test(l)))
    throw invalid(`hostname ${JSON.stringify(input)} is not a valid domain name (labels of letters, digits and inner hyphens, 63 characters at most)`);
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) throw invalid('hostname must be a domain name, not an IP address');
  if (ascii === appsDomain || ascii.endsWith(`.${appsDomain}`)) {
    throw invalid(`hostnames under ${appsDomain} belong to the platform: every web service already has one`, 'reserved_hostname');
  }
  return ascii;
}
