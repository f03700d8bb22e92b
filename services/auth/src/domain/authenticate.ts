import { AuthenticationError, isUuid, type Identity, type Role } from '@pier/kit';
import type { AuthenticateRequest__Output } from '@pier/kit/proto/auth/v1/AuthenticateRequest.ts';
import type { AuthenticateResponse__Output } from '@pier/kit/proto/auth/v1/AuthenticateResponse.ts';
import type { AuthContext } from './context.ts';
import type { CredentialTable } from './authn-port.ts';
import type { Resolved, Scope } from './records.ts';
import { vpcNotFound, workspaceNotFound } from './ids.ts';
import { API_KEY_PATTERN, SESSION_TOKEN_PATTERN, sha256Hex, tokenKind } from './tokens.ts';

/** The gateway's question and auth's answer, as proto/auth.proto defines them (types generated in kit). */
export type AuthenticateRequest = AuthenticateRequest__Output;
/** `cache_until_ms`: until when (Unix ms) a gateway may reuse this answer, under `epoch`; 0: not at all. */
export type AuthenticateResponse = AuthenticateResponse__Output;

/** The 401 message the spec fixes for API keys; the gateway passes it through as is. */
export const INVALID_API_KEY = 'invalid or expired API key';

/**
 * Answers the gateway's one question per request: who is this bearer token, and what is
 * their role where the path points. The credential and the role are read from the
 * database on every call. A gateway may reuse an answer for an API key or CLI session
 * (never for a JWT) until the credential expires or half the identity token's life has
 * gone, and only while the auth epoch it was read under is current
 * (domain/answer-caches.ts): revocation, expiry, downgrade and removal are still
 * effective on the very next request.
 *
 * A workspace the caller is not a member of is answered 404, not 403, so that workspace
 * ids cannot be probed for existence; the same for a VPC outside the workspace.
 */
export async function authenticate(ctx: AuthContext, req: AuthenticateRequest): Promise<AuthenticateResponse> {
  const token = req.token ?? '';
  const askedWs = req.workspace_id || null;
  const askedVpc = req.vpc_id || null;
  // A malformed id cannot match anything; it is looked up as "no scope" so the token is
  // still judged first (a bad token is 401 whatever the path), then answered 404.
  const wsOk = askedWs !== null && isUuid(askedWs);
  const scope: Scope = {
    workspaceId: wsOk ? askedWs.toLowerCase() : null,
    vpcId: wsOk && askedVpc !== null && isUuid(askedVpc) ? askedVpc.toLowerCase() : null,
  };
  const { found, table } = await resolve(ctx, token, scope);
  let role: Role | undefined;
  if (askedWs !== null) {
    if (scope.workspaceId === null || !found.role) throw workspaceNotFound();
    role = found.role;
  }
  if (askedVpc !== null && (scope.vpcId === null || !found.vpc_found)) throw vpcNotFound();
  // Only an accepted request counts as a use of the key or session.
  if (table) ctx.uses.touch(table, found.credential_id!);
  const identity: Identity = {
    kind: 'user',
    subject: found.user_id,
    email: found.email,
    workspaceId: scope.workspaceId ?? undefined,
    vpcId: scope.vpcId ?? undefined,
    role,
    // Carried so that a CLI session this request mints is bound to the same key.
    apiKeyId: found.api_key_id ?? undefined,
    // Who did it with what: every event the request writes names this credential.
    credential: {
      kind: table === 'api_keys' ? 'api_key' : table === 'cli_sessions' ? 'cli_session' : 'oidc',
      id: found.credential_id,
      name: found.credential_name,
    },
  };
  const minted = await ctx.minter.mint(identity);
  const now = ctx.now().getTime();
  // Half the token's remaining life: a reused token still has that much left when forwarded.
  const expiry = found.expires_at === null ? Infinity : new Date(found.expires_at).getTime();
  const cacheUntil = table ? Math.min(expiry, now + (minted.expiresIn * 1000) / 2) : 0;
  return {
    user_id: found.user_id,
    email: found.email,
    role: role ?? '',
    identity_token: minted.token,
    expires_in: minted.expiresIn,
    cache_until_ms: Math.floor(cacheUntil),
    epoch: found.epoch,
    api_key_id: table === 'api_keys' ? found.credential_id! : '',
    session_id: table === 'cli_sessions' ? found.credential_id! : '',
    installation: ctx.installation,
  };
}

async function resolve(ctx: AuthContext, token: string, scope: Scope): Promise<{ found: Resolved; table?: CredentialTable }> {
  if (token.length === 0) throw new AuthenticationError('missing bearer token', 'missing_token');
  switch (tokenKind(token)) {
    case 'api_key': {
      const found = API_KEY_PATTERN.test(token) ? await ctx.credentials.apiKey(sha256Hex(token), scope) : undefined;
      if (!found) throw new AuthenticationError(INVALID_API_KEY, 'invalid_api_key');
      return { found, table: 'api_keys' };
    }
    case 'session': {
      const found = SESSION_TOKEN_PATTERN.test(token) ? await ctx.credentials.session(sha256Hex(token), scope) : undefined;
      if (!found) throw new AuthenticationError('invalid or expired CLI session token', 'invalid_session');
      return { found, table: 'cli_sessions' };
    }
    case 'jwt': {
      if (!ctx.jwt) throw new AuthenticationError('JWT sign-in is not configured on this platform', 'invalid_token');
      const { email } = await ctx.jwt.verify(token);
      const found = await ctx.credentials.user(email, scope);
      if (found) return { found };
      await ctx.store.users.findOrCreate(email);
      return { found: (await ctx.credentials.user(email, scope))! };
    }
  }
}
