/**
 * A tiny OpenID provider for tests: an RS256 key pair and a loopback HTTP server that
 * publishes its JWKS, so auth verifies dashboard JWTs exactly as it would against a real
 * provider. `env` is what auth needs (`startPlatform({ env: { auth: oidc.env } })`).
 * For the console it is also a provider a browser signs in with: discovery, an
 * authorization endpoint (a page asking for the e-mail, then a redirect with a code), and
 * a token endpoint that checks the code, the redirect URI and the PKCE verifier (S256),
 * answers with an ID token and a refresh token, and renews both on refresh (counted in
 * `refreshes`). `consoleEnv` is what the gateway needs to offer it.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';

export interface OidcProvider {
  issuer: string;
  audience: string;
  jwksUrl: string;
  env: Record<string, string>;
  /** The gateway's settings for the console's "Sign in with Test IdP". */
  consoleEnv: Record<string, string>;
  /** Refresh-token grants answered so far. */
  readonly refreshes: number;
  /** A JWT for `email`; `opts` bends one property to test refusals. */
  sign(
    email: string,
    opts?: { audience?: string; issuer?: string; expiresInSeconds?: number; key?: CryptoKey; claims?: Record<string, unknown> },
  ): Promise<string>;
  stop(): Promise<void>;
}

/** `idTokenSeconds`: the lifetime of the ID tokens its token endpoint issues (default 300). */
export async function startOidcProvider(opts: { idTokenSeconds?: number } = {}): Promise<OidcProvider> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { email: string; clientId: string; redirectUri: string; challenge: string }>();
  const refreshTokens = new Map<string, string>();
  let refreshes = 0;
  const lifetime = opts.idTokenSeconds ?? 300;
  const tokens = async (email: string) => {
    const refresh = randomBytes(24).toString('base64url');
    refreshTokens.set(refresh, email);
    const idToken = await provider.sign(email, { expiresInSeconds: lifetime });
    return { id_token: idToken, access_token: idToken, token_type: 'Bearer', expires_in: lifetime, refresh_token: refresh };
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'access-control-allow-origin': '*', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer,
        jwks_uri: jwksUrl,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
      });
    }
    if (url.pathname === '/authorize' && req.method === 'GET') {
      const q = url.searchParams;
      const problem =
        q.get('response_type') !== 'code'
          ? 'response_type must be code'
          : q.get('client_id') !== audience
            ? 'unknown client_id'
            : q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')
              ? 'PKCE with S256 is required'
              : !q.get('redirect_uri') || !q.get('state')
                ? 'redirect_uri and state are required'
                : null;
      if (problem) return json(400, { error: 'invalid_request', error_description: problem });
      const hidden = ['client_id', 'redirect_uri', 'state', 'code_challenge']
        .map((k) => `<input type="hidden" name="${k}" value="${escapeHtml(q.get(k)!)}">`)
        .join('');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        `<!doctype html><html lang="en"><title>Test IdP</title><main><h1>Test IdP</h1><form method="post" action="/authorize">${hidden}` +
          `<label for="email">Email</label> <input id="email" name="email" type="email" required> <button type="submit">Continue</button></form></main></html>`,
      );
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      if (url.pathname === '/authorize' && req.method === 'POST') {
        const code = randomBytes(16).toString('base64url');
        codes.set(code, {
          email: form.get('email')!,
          clientId: form.get('client_id')!,
          redirectUri: form.get('redirect_uri')!,
          challenge: form.get('code_challenge')!,
        });
        const to = new URL(form.get('redirect_uri')!);
        to.searchParams.set('code', code);
        to.searchParams.set('state', form.get('state')!);
        res.writeHead(302, { location: to.toString() });
        res.end();
        return;
      }
      if (url.pathname === '/token' && req.method === 'POST') {
        void (async () => {
          if (form.get('grant_type') === 'authorization_code') {
            const c = codes.get(form.get('code') ?? '');
            codes.delete(form.get('code') ?? '');
            const verifier = form.get('code_verifier') ?? '';
            if (!c || c.clientId !== form.get('client_id') || c.redirectUri !== form.get('redirect_uri')) return json(400, { error: 'invalid_grant' });
            if (createHash('sha256').update(verifier).digest('base64url') !== c.challenge)
              return json(400, { error: 'invalid_grant', error_description: 'PKCE verifier does not match' });
            return json(200, await tokens(c.email));
          }
          if (form.get('grant_type') === 'refresh_token') {
            const email = refreshTokens.get(form.get('refresh_token') ?? '');
            refreshTokens.delete(form.get('refresh_token') ?? '');
            if (!email || form.get('client_id') !== audience) return json(400, { error: 'invalid_grant' });
            refreshes++;
            return json(200, await tokens(email));
          }
          json(400, { error: 'unsupported_grant_type' });
        })();
        return;
      }
      res.statusCode = 404;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${base}/`;
  const audience = 'pier-dashboard';
  const jwksUrl = `${base}/jwks`;
  const provider: OidcProvider = {
    issuer,
    audience,
    jwksUrl,
    env: { PIER_OIDC_ISSUER: issuer, PIER_OIDC_JWKS_URL: jwksUrl, PIER_OIDC_AUDIENCE: audience },
    consoleEnv: { PIER_OIDC_ISSUER: issuer, PIER_OIDC_AUDIENCE: audience, PIER_OIDC_PROVIDER_NAME: 'Test IdP' },
    get refreshes() {
      return refreshes;
    },
    sign: (email, opts = {}) =>
      new SignJWT({ email, email_verified: true, ...opts.claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
        .setSubject(`sub-${email}`)
        .setIssuer(opts.issuer ?? issuer)
        .setAudience(opts.audience ?? audience)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + (opts.expiresInSeconds ?? 300))
        .sign(opts.key ?? privateKey),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return provider;
}

const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
