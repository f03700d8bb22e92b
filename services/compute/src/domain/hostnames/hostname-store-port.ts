// What custom domains need from compute's schema. The domain defines it; store/hostname-store.ts
// implements it with knex.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Service } from '../records.ts';

export const HOSTNAME_STATUSES = ['pending', 'verified', 'active', 'failed'] as const;
export type HostnameStatus = (typeof HOSTNAME_STATUSES)[number];
export const TLS_STATUSES = ['pending', 'issued', 'failed'] as const;
export type TlsStatus = (typeof TLS_STATUSES)[number];

export interface Hostname {
  id: string;
  workspace_id: string;
  vpc_id: string;
  service_id: string;
  /** Lowercase ASCII (punycode), no trailing dot; held by one verified domain at most, claimed by any number of pending ones. */
  hostname: string;
  status: HostnameStatus;
  /** The value the TXT record `_pier-challenge.<hostname>` must hold: random per claim, so no claim verifies with another's record. */
  verification_token: string;
  /** When DNS first proved the claimant controls the hostname: from then on this domain alone holds it. */
  verified_at: Date | null;
  /** An unverified claim lapses then and is treated as gone; null once verified. */
  claim_expires_at: Date | null;
  /** True once DNS checked out: the edge routes the hostname (verified, active, or failed at TLS). */
  routed: boolean;
  tls_status: TlsStatus;
  tls_issuer: string | null;
  tls_expires_at: Date | null;
  tls_error: string | null;
  error: string | null;
  last_checked_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewHostname = Pick<Hostname, 'workspace_id' | 'vpc_id' | 'service_id' | 'hostname' | 'verification_token' | 'claim_expires_at'>;

/** The service a removed claim belonged to: whom its event is for. */
export type ClaimOwner = Pick<Service, 'id' | 'workspace_id' | 'vpc_id' | 'name'>;
export interface RemovedClaim {
  domain: Hostname;
  owner: ClaimOwner;
}
export type HostnamePatch = Partial<
  Pick<Hostname, 'status' | 'routed' | 'tls_status' | 'tls_issuer' | 'tls_expires_at' | 'tls_error' | 'error' | 'last_checked_at'>
>;

export interface HostnameStore {
  transaction<T>(fn: (tx: HostnameStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  /** Serialises claims on `hostname` across every compute until the transaction ends (call it in one). */
  lockHostname(hostname: string): Promise<void>;
  /** The verified domain holding `hostname`, wherever it is. */
  hostnameHolder(hostname: string): Promise<Hostname | undefined>;
  /** ConflictError `hostname_taken` when the service has the hostname already. */
  insertHostname(row: NewHostname): Promise<Hostname>;
  /**
   * Reads below see only live domains at `now`: verified ones, and claims not yet lapsed. A
   * lapsed claim is gone to every reader before the expiry pass removes its row.
   */
  findHostname(serviceId: string, id: string, now: Date): Promise<Hostname | undefined>;
  /** Oldest first (the order they were attached). */
  listHostnames(serviceId: string, page: PageRequest, now: Date): Promise<Page<Hostname>>;
  countHostnames(serviceId: string, now: Date): Promise<number>;
  /**
   * Makes a live, unverified claim the hostname's holder (verified at `now`, no expiry);
   * undefined when the claim is no longer there. ConflictError `hostname_taken` when another
   * domain was verified for the hostname (the partial unique index's verdict).
   */
  markVerified(id: string, now: Date): Promise<Hostname | undefined>;
  /** Removes every unverified claim on `hostname` but `keepId`'s. */
  removeRivalClaims(hostname: string, keepId: string): Promise<RemovedClaim[]>;
  /** Removes claims lapsed by `now`: at most `limit`, or those of one service and hostname. */
  removeLapsedClaims(now: Date, which: { limit: number } | { serviceId: string; hostname: string }): Promise<RemovedClaim[]>;
  updateHostname(id: string, patch: HostnamePatch): Promise<Hostname>;
  deleteHostname(id: string): Promise<void>;
  /** Services the edge routes: live web services with a port (not being deleted), with what a route reads of them. */
  routableServices(): Promise<RoutableService[]>;
  /** Every domain the edge routes, across services (the routing table). */
  routedHostnames(): Promise<Hostname[]>;
  /** Routed domains whose certificate expires before `before`, or that wait for one (kubernetes). */
  hostnamesNeedingTls(before: Date): Promise<Hostname[]>;
  /** Removes the domains of a deleted service; returns them (their certificates go too). */
  deleteServiceHostnames(serviceId: string): Promise<Hostname[]>;
}

/** What the routing table reads of a service: read for every web service at every sync, so no more. */
export type RoutableService = Pick<Service, 'id' | 'workspace_id' | 'vpc_id' | 'name' | 'port' | 'desired_replicas' | 'health_check_path'>;
