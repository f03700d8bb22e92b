// What Authenticate and FindVpc need beyond the schema: the credential read, the OIDC
// provider, the identity token signer and checker, and the record of uses. authn/ and
// store/ implement them.
import type { Identity } from '@pier/kit';
import type { Resolved, Scope } from './records.ts';

export interface CredentialLookup {
  apiKey(keyHash: string, scope: Scope): Promise<Resolved | undefined>;
  session(tokenHash: string, scope: Scope): Promise<Resolved | undefined>;
  user(email: string, scope: Scope): Promise<Resolved | undefined>;
}

/** Checks a JWT from the configured OIDC provider and returns its verified e-mail. */
export interface JwtVerifier {
  verify(token: string): Promise<{ email: string }>;
}

export interface IdentityMinter {
  mint(identity: Identity): Promise<{ token: string; expiresIn: number }>;
}

/** Checks an identity token auth signed (kit's IdentityVerifier). */
export interface IdentityCheck {
  verify(token: string | undefined): Promise<Identity>;
}

export type CredentialTable = 'api_keys' | 'cli_sessions';

/** Uses of API keys and CLI sessions, written to `last_used_at` in batches (store/last-used.ts). */
export interface UseRecorder {
  touch(table: CredentialTable, id: string): void;
  /** A use seen by this instance and not yet written, so its listings are never behind. */
  pendingFor(table: CredentialTable, id: string): Date | undefined;
}
