/**
 * A tiny OpenID provider for tests: an RS256 key pair and a loopback HTTP server that
 * publishes its JWKS, so auth verifies dashboard JWTs exactly as it would against a real
 * provider. `env` is what auth needs (`startPlatform({ env: { auth: oidc.env } })`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';

export interface OidcProvider {
  issuer: string;
  audience: string;
  jwksUrl: string;
  env: Record<string, string>;
  /** A JWT for `email`; `opts` bends one property to test refusals. */
  sign(
    email: string,
    opts?: { audience?: string; issuer?: string; expiresInSeconds?: number; key?: CryptoKey; claims?: Record<string, unknown> },
  ): Promise<string>;
  stop(): Promise<void>;
}

export async function startOidcProvider(): Promise<OidcProvider> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const server = http.createServer((req, res) => {
    if (req.url === '/jwks') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const issuer = `${base}/`;
  const audience = 'pier-dashboard';
  const jwksUrl = `${base}/jwks`;
  return {
    issuer,
    audience,
    jwksUrl,
    env: { PIER_OIDC_ISSUER: issuer, PIER_OIDC_JWKS_URL: jwksUrl, PIER_OIDC_AUDIENCE: audience },
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
}
