import { createRemoteJWKSet, jwtVerify, errors } from 'jose';
import { AuthenticationError, UnavailableError } from '@pier/kit';
import type { JwtVerifier } from '../domain/authn-port.ts';

export interface OidcSettings {
  issuer: string;
  jwksUrl: string;
  audience: string;
}

/**
 * Verifies dashboard JWTs against the OIDC provider's published keys. jose fetches the
 * JWKS once, keeps it, and refetches (at most every 30 s) when a token names a key it has
 * not seen, so a provider's key rotation is picked up without a restart.
 */
export class OidcVerifier implements JwtVerifier {
  private readonly jwks: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly settings: OidcSettings) {
    this.jwks = createRemoteJWKSet(new URL(settings.jwksUrl), { timeoutDuration: 3000, cooldownDuration: 30_000 });
  }

  async verify(token: string): Promise<{ email: string }> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      if (err instanceof errors.JWKSTimeout || isFetchFailure(err)) {
        throw new UnavailableError("the identity provider's keys could not be fetched to verify the token", 'idp_unavailable');
      }
      if (err instanceof errors.JWTExpired) throw new AuthenticationError('token has expired', 'invalid_token');
      throw new AuthenticationError('invalid token', 'invalid_token');
    }
    const email = payload.email;
    if (typeof email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(email)) {
      throw new AuthenticationError('token carries no email claim', 'invalid_token');
    }
    // Users are found by e-mail, so the address is who this is: only one the provider says
    // it verified (the boolean true, nothing looser) may sign in, or anyone who can put an
    // address in their profile at the provider would sign in as its owner here.
    if (payload.email_verified !== true) {
      throw new AuthenticationError(
        'the identity provider has not verified the e-mail address of this token (email_verified must be true)',
        'email_not_verified',
      );
    }
    return { email: email.toLowerCase() };
  }
}

function isFetchFailure(err: unknown): boolean {
  // fetch() rejects with a TypeError ("fetch failed") when the host cannot be reached; a
  // JWKS endpoint answering with an error status or garbage is reported by jose as a
  // generic JOSEError about the key set, or JWKSInvalid. Either way: the provider, not
  // the token, is at fault.
  if (err instanceof TypeError || err instanceof errors.JWKSInvalid) return true;
  return err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC' && /JSON Web Key Set|fetch/i.test(err.message);
}
