// Everything the edge use cases (routing table, custom domains, certificates) work with, as
// one field of the context. Null `port`: the edge is turned off (PIER_EDGE=off) and custom
// domains answer 503.
import type { DnsLookup } from '../hostnames/dns-port.ts';
import type { HostnameStore } from '../hostnames/hostname-store-port.ts';
import type { EdgePort } from './edge-port.ts';

export interface EdgeSettings {
  /** Every web service's host is `<name>-<short id>.<apps domain>`. */
  appsDomain: string;
  /** Custom domains one service may hold. */
  maxDomainsPerService: number;
  /** How long an unverified claim on a hostname lasts. */
  claimTtlMs: number;
  /** A certificate is renewed once it expires within this long. */
  renewBeforeMs: number;
}

/** The background loop, as the use cases see it. */
export interface EdgeSyncer {
  /** Looks at the routing table now rather than at the next pass. */
  poke(): void;
}

export interface EdgeDeps {
  port: EdgePort | null;
  store: HostnameStore;
  dns: DnsLookup;
  settings: EdgeSettings;
  /** Set once the worker exists (server.ts). */
  syncer: EdgeSyncer;
}
