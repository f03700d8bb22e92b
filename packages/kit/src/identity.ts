import { SignJWT, jwtVerify, importJWK, exportJWK, generateKeyPair, type JWK, type CryptoKey, type KeyObject } from 'jose';
import { AuthenticationError } from './errors.ts';
import type { Role } from './roles.ts';

// The identity token is what auth hands the gateway after checking a bearer token, and
// what every service trusts instead of any bare header. EdDSA: small and fast to verify.

export const IDENTITY_HEADER = 'x-pier-identity';
const ISSUER = 'pier-auth';
/** Issuer of tokens one Pier service signs with its own key to call another. */
export const SERVICE_ISSUER = 'pier-service';
const AUDIENCE = 'pier';
const ALG = 'EdDSA';

export interface Identity {
  /** `user` for people and their keys/sessions, `service` for one Pier service calling another. */
  kind: 'user' | 'service';
  /** User id, or service name for `service` identities. */
  subject: string;
  email?: string;
  workspaceId?: string;
  vpcId?: string;
  role?: Role;
  /**
   * The API key this request's authority comes from: the key itself, or the key a CLI
   * session was minted with. auth binds a session minted by such a caller to that key
   * (services/auth README, "CLI sessions").
   */
  apiKeyId?: string;
  /** The credential this request came with (its kind, id and name): the audit log's actor. */
  credential?: Credential;
}

/** The credential a request was made with, as auth puts it in the identity token. */
export interface Credential {
  kind: 'api_key' | 'cli_session' | 'oidc';
  /** The API key's or CLI session's id; null for an OIDC sign-in (no stored credential). */
  id: string | null;
  name: string | null;
}

const CREDENTIAL_KINDS = new Set<string>(['api_key', 'cli_session', 'oidc']);

function credentialOf(claim: unknown): Credential | undefined {
  if (!claim || typeof claim !== 'object') return undefined;
  const c = claim as Record<string, unknown>;
  if (typeof c.k !== 'string' || !CREDENTIAL_KINDS.has(c.k)) return undefined;
  return { kind: c.k as Credential['kind'], id: typeof c.i === 'string' ? c.i : null, name: typeof c.n === 'string' ? c.n : null };
}

type Key = CryptoKey | KeyObject | Uint8Array;

export async function generateIdentityKeys(): Promise<{ privateJwk: string; publicJwk: string }> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { crv: 'Ed25519', extractable: true });
  return {
    privateJwk: JSON.stringify(await exportJWK(privateKey)),
    publicJwk: JSON.stringify(await exportJWK(publicKey)),
  };
}

export async function importIdentityKey(jwkJson: string): Promise<Key> {
  return importJWK(JSON.parse(jwkJson) as JWK, ALG);
}

export async function signIdentity(privateKey: Key, identity: Identity, ttlSeconds: number, issuer = ISSUER): Promise<string> {
  const claims: Record<string, unknown> = { kind: identity.kind };
  if (identity.email) claims.email = identity.email;
  if (identity.workspaceId) claims.ws = identity.workspaceId;
  if (identity.vpcId) claims.vpc = identity.vpcId;
  if (identity.role) claims.role = identity.role;
  if (identity.apiKeyId) claims.key = identity.apiKeyId;
  if (identity.credential) claims.cred = { k: identity.credential.kind, i: identity.credential.id, n: identity.credential.name };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: ALG })
    .setSubject(identity.subject)
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(privateKey);
}

/**
 * Verifies identity tokens. A verified token is remembered until it expires: the gateway
 * forwards the same short-lived token for many requests, and re-checking a signature we
 * have already checked buys nothing.
 */
export class IdentityVerifier {
  private readonly cache = new Map<string, { identity: Identity; exp: number }>();

  constructor(
    private readonly publicKey: Key,
    private readonly issuer = ISSUER,
  ) {}

  static async fromJwk(jwkJson: string, issuer = ISSUER): Promise<IdentityVerifier> {
    return new IdentityVerifier(await importIdentityKey(jwkJson), issuer);
  }

  async verify(token: string | undefined): Promise<Identity> {
    if (!token) throw new AuthenticationError('missing identity token', 'unauthenticated');
    const now = Date.now() / 1000;
    const hit = this.cache.get(token);
    if (hit && hit.exp > now) return hit.identity;
    try {
      const { payload } = await jwtVerify(token, this.publicKey, { issuer: this.issuer, audience: AUDIENCE, algorithms: [ALG] });
      const identity: Identity = {
        kind: payload.kind === 'service' ? 'service' : 'user',
        subject: String(payload.sub),
        email: payload.email as string | undefined,
        workspaceId: payload.ws as string | undefined,
        vpcId: payload.vpc as string | undefined,
        role: payload.role as Role | undefined,
        apiKeyId: payload.key as string | undefined,
        credential: credentialOf(payload.cred),
      };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(token, { identity, exp: payload.exp ?? now });
      return identity;
    } catch {
      throw new AuthenticationError('invalid identity token', 'unauthenticated');
    }
  }
}
