import type { Logger } from '@pier/kit';
import type { AnswerCaches } from './answer-caches.ts';
import type { CredentialLookup, IdentityCheck, IdentityMinter, JwtVerifier, UseRecorder } from './authn-port.ts';
import type { AuthStore } from './store-port.ts';
import type { VpcUsage } from './vpc-usage-port.ts';

/** What every use case works with. Built once in server.ts; no globals. */
export interface AuthContext {
  store: AuthStore;
  /** Bearer credentials as Authenticate reads them: one statement per request (store/credentials.ts). */
  credentials: CredentialLookup;
  /** Absent when no OIDC provider is configured: JWTs are then refused. */
  jwt?: JwtVerifier;
  minter: IdentityMinter;
  /** Checks the identity tokens FindVpc is asked with. */
  identities: IdentityCheck;
  uses: UseRecorder;
  /** The gateways' answer caches (answer-caches.ts). */
  caches: AnswerCaches;
  /** Asked before a VPC is deleted. */
  usage: VpcUsage;
  /** This installation's id (answer-caches.ts). */
  installation: string;
  log: Logger;
  /** Called after a commit that wrote events, so the relay publishes them now rather than at its next pass. */
  eventsWritten(): void;
  now(): Date;
}

/** Runs `fn` in one transaction; once it has committed, the events it wrote are published. */
export async function inTransaction<T>(ctx: AuthContext, fn: (tx: AuthStore) => Promise<T>): Promise<T> {
  const result = await ctx.store.transaction(fn);
  ctx.eventsWritten();
  return result;
}
