// DNS as domain verification reads it: through the configured resolvers (PIER_DNS_RESOLVERS),
// never a cache of ours, so a record the user just fixed is seen by the next verify.

export interface DnsLookup {
  /** TXT records of `name`, each one's strings joined (a long value comes in 255-byte chunks); [] when none. */
  txt(name: string): Promise<string[]>;
  /** The CNAME target of `name` (lowercase, no trailing dot), or null when it has none. */
  cname(name: string): Promise<string | null>;
  /** A and AAAA addresses of `name`; [] when none. */
  addresses(name: string): Promise<string[]>;
}

/** The resolvers could not answer at all (timeout, refused): not the same as "no such record". */
export class DnsUnavailableError extends Error {}
