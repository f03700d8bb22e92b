// Sign-in with the identity provider, as the contract's dashboard token is meant to be
// had: OAuth 2.0 authorization code with PKCE (RFC 7636, S256) by a public client in the
// browser, no client secret and no cookie. The gateway names the provider's endpoints at
// /console-config.json (and lets the CSP reach them). The ID token is the bearer the API
// checks (its audience is the console's client id, PIER_OIDC_AUDIENCE); it is short-lived,
// so a refresh token renews it a minute before it expires ("silent refresh"). Both stay in
// this tab's session storage, like a pasted token; signing out forgets them.

export interface OidcConfig {
  provider_name: string;
  client_id: string;
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  scopes: string;
}

export const CALLBACK_PATH = '/auth/callback';
const PENDING_KEY = 'pier.console.oidc.pending';
const REFRESH_KEY = 'pier.console.oidc.refresh';
/** Renew this long before the ID token expires. */
const REFRESH_AHEAD_MS = 60_000;

export const refreshStore = {
  get: (): string | null => sessionStorage.getItem(REFRESH_KEY),
  set: (token: string) => sessionStorage.setItem(REFRESH_KEY, token),
  clear: () => sessionStorage.removeItem(REFRESH_KEY),
};

/** How people may sign in here: null when only a token can be pasted. */
export async function loadOidcConfig(): Promise<OidcConfig | null> {
  try {
    const res = await fetch('/console-config.json', { headers: { accept: 'application/json' } });
    if (!res.ok) return null;
    return ((await res.json()) as { oidc: OidcConfig | null }).oidc;
  } catch {
    return null;
  }
}

const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const randomString = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => `${location.origin}${CALLBACK_PATH}`;

/** Leaves for the provider's sign-in page; it comes back to CALLBACK_PATH with a code. */
export async function beginSignIn(c: OidcConfig, returnTo: string): Promise<void> {
  const verifier = randomString();
  const state = randomString();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, returnTo }));
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL(c.authorization_endpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: c.client_id,
    redirect_uri: redirectUri(),
    scope: c.scopes,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }))
    url.searchParams.set(k, v);
  location.assign(url.toString());
}

interface TokenAnswer {
  id_token?: string;
  refresh_token?: string;
  error?: string;
  error_description?: string;
}

async function tokenRequest(c: OidcConfig, form: Record<string, string>): Promise<string> {
  const res = await fetch(c.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: c.client_id, ...form }),
  });
  const answer = (await res.json().catch(() => ({}))) as TokenAnswer;
  if (!res.ok || !answer.id_token) throw new Error(`${c.provider_name} refused: ${answer.error_description ?? answer.error ?? `status ${res.status}`}`);
  if (answer.refresh_token) refreshStore.set(answer.refresh_token);
  else refreshStore.clear();
  return answer.id_token;
}

/** On CALLBACK_PATH: checks the state, trades the code for the ID token, and says where the person was going. */
export async function finishSignIn(c: OidcConfig): Promise<{ token: string; returnTo: string }> {
  const q = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as { verifier: string; state: string; returnTo: string } | null;
  sessionStorage.removeItem(PENDING_KEY);
  if (q.get('error')) throw new Error(`${c.provider_name} refused: ${q.get('error_description') ?? q.get('error')}`);
  // A state that is not the one this tab sent: a forged or replayed answer.
  if (!pending || !q.get('code') || q.get('state') !== pending.state) throw new Error('This sign-in was not started here, or was already used. Sign in again.');
  const token = await tokenRequest(c, { grant_type: 'authorization_code', code: q.get('code')!, redirect_uri: redirectUri(), code_verifier: pending.verifier });
  return { token, returnTo: pending.returnTo };
}

/** A new ID token for the stored refresh token; throws when there is none or the provider refuses. */
export function renew(c: OidcConfig): Promise<string> {
  const refresh = refreshStore.get();
  if (!refresh) return Promise.reject(new Error('no refresh token'));
  return tokenRequest(c, { grant_type: 'refresh_token', refresh_token: refresh });
}

/** When to renew a JWT (ms from now), or null for a token that is not a JWT with `exp` (an API key, a CLI session). */
export function renewIn(token: string, now = Date.now()): number | null {
  const payload = token.split('.')[1];
  if (!payload) return null;
  try {
    const { exp } = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { exp?: number };
    return typeof exp === 'number' ? Math.max(0, exp * 1000 - REFRESH_AHEAD_MS - now) : null;
  } catch {
    return null;
  }
}
