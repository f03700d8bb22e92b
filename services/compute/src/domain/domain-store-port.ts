// What custom domains need from compute's schema. The domain defines it; store/domain-store.ts
// implements it with knex.
import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Service } from './records.ts';

export const DOMAIN_STATUSES = ['pending', 'verified', 'active', 'failed'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];
export const TLS_STATUSES = ['pending', 'issued', 'failed'] as const;
export type TlsStatus = (typeof TLS_STATUSES)[number];

export interface Domain {
  id: string;
  workspace_id: string;
  vpc_id: string;
  service_id: string;
  /** Lowercase ASCII (punycode), no trailing dot; unique across the platform. */
  hostname: string;
  status: DomainStatus;
  /** The value the TXT record `_pier-challenge.<hostname>` must hold. */
  verification_token: string;
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

export type NewDomain = Pick<Domain, 'workspace_id' | 'vpc_id' | 'service_id' | 'hostname' | 'verification_token'>;
export type DomainPatch = Partial<
  Pick<Domain, 'status' | 'routed' | 'tls_status' | 'tls_issuer' | 'tls_expires_at' | 'tls_error' | 'error' | 'last_checked_at'>
>;

export interface DomainStore {
  transaction<T>(fn: (tx: DomainStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  /** ConflictError `hostname_taken` when the hostname is attached anywhere on the platform. */
  insertDomain(row: NewDomain): Promise<Domain>;
  findDomain(serviceId: string, id: string): Promise<Domain | undefined>;
  /** Oldest first (the order they were attached). */
  listDomains(serviceId: string, page: PageRequest): Promise<Page<Domain>>;
  countDomains(serviceId: string): Promise<number>;
  updateDomain(id: string, patch: DomainPatch): Promise<Domain>;
  deleteDomain(id: string): Promise<void>;
  /** Services the edge routes: live web services with a port (not being deleted). */
  routableServices(): Promise<Service[]>;
  /** Every domain the edge routes, across services (the routing table). */
  routedDomains(): Promise<Domain[]>;
  /** Routed domains whose certificate expires before `before`, or that wait for one (kubernetes). */
  domainsNeedingTls(before: Date): Promise<Domain[]>;
  /** Removes the domains of a deleted service; returns them (their certificates go too). */
  deleteServiceDomains(serviceId: string): Promise<Domain[]>;
}
