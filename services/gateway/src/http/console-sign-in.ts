// What the console needs to sign a person in with the identity provider (the contract's
// dashboard JWT): authorization code + PKCE, in the browser, as a public client. The
// gateway reads the provider's discovery document (the operator's PIER_OIDC_ISSUER, never
// a tenant's URL) and hands the console its endpoints at /console-config.json, so the
// page makes no cross-origin read it does not need; the CSP's connect-src then admits the
// issuer and the token endpoint, the only cross-origin calls the console makes (the code
// exchange and the silent refresh). The authorization endpoint is a top-level navigation.
import type { Logger } from '@pier/kit';

export interface ConsoleOidcSettings {
  issuer: string;
  /** The console's client id at the provider: the audience auth checks ID tokens for. */
  clientId: string;
  /** Shown on the button: "Sign in with <name>". */
  providerName: string;
  scopes: string;
}

/** /console-config.json: `oidc` is null when sign-in with a provider is off or its discovery failed (the token field always works). */
export interface ConsoleConfig {
  oidc: {
    provider_name: string;
    client_id: string;
    issuer: string;
    authorization_endpoint: string;
    token_endpoint: string;
    scopes: string;
  } | null;
}

/** How long a read discovery document is trusted; a failed read is tried again after a tenth of it. */
const DISCOVERY_TTL_MS = 10 * 60_000;

export class ConsoleSignIn {
  private cached?: { at: number; config: ConsoleConfig; ok: boolean };
  private reading?: Promise<ConsoleConfig>;

  constructor(
    private readonly settings: ConsoleOidcSettings | undefined,
    private readonly logger: Logger,
    private readonly fetcher: typeof fetch = fetch,
  ) {}

  /** Origins the console may call besides its own: the provider's issuer and token endpoint. */
  connectOrigins(): string[] {
    if (!this.settings) return [];
    const origins = new Set([new URL(this.settings.issuer).origin]);
    const token = this.cached?.config.oidc?.token_endpoint;
    if (token) origins.add(new URL(token).origin);
    return [...origins];
  }

  async config(): Promise<ConsoleConfig> {
    if (!this.settings) return { oidc: null };
    const c = this.cached;
    if (c && Date.now() - c.at < (c.ok ? DISCOVERY_TTL_MS : DISCOVERY_TTL_MS / 10)) return c.config;
    this.reading ??= this.discover(this.settings).finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async discover(s: ConsoleOidcSettings): Promise<ConsoleConfig> {
    const url = `${s.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    try {
      const res = await this.fetcher(url, { signal: AbortSignal.timeout(5_000), redirect: 'error' });
      if (!res.ok) throw new Error(`answered ${res.status}`);
      const doc = (await res.json()) as { authorization_endpoint?: unknown; token_endpoint?: unknown };
      const endpoint = (v: unknown, name: string) => {
        if (typeof v !== 'string' || !/^https?:\/\//.test(v)) throw new Error(`its ${name} is missing or not an http(s) URL`);
        return v;
      };
      const config: ConsoleConfig = {
        oidc: {
          provider_name: s.providerName,
          client_id: s.clientId,
          issuer: s.issuer,
          authorization_endpoint: endpoint(doc.authorization_endpoint, 'authorization_endpoint'),
          token_endpoint: endpoint(doc.token_endpoint, 'token_endpoint'),
          scopes: s.scopes,
        },
      };
      this.cached = { at: Date.now(), config, ok: true };
      return config;
    } catch (err) {
      this.logger.warn(
        { url, err: String((err as Error).message ?? err) },
        "cannot read the identity provider's discovery document: the console offers token sign-in only",
      );
      const config: ConsoleConfig = { oidc: null };
      this.cached = { at: Date.now(), config, ok: false };
      return config;
    }
  }
}

/** The settings from the environment auth shares: on when PIER_OIDC_ISSUER and a client id (PIER_OIDC_CLIENT_ID, else PIER_OIDC_AUDIENCE) are set. */
export function consoleOidcSettings(env: {
  PIER_OIDC_ISSUER?: string;
  PIER_OIDC_AUDIENCE?: string;
  PIER_OIDC_CLIENT_ID?: string;
  PIER_OIDC_PROVIDER_NAME?: string;
  PIER_OIDC_SCOPES?: string;
}): ConsoleOidcSettings | undefined {
  const clientId = env.PIER_OIDC_CLIENT_ID ?? env.PIER_OIDC_AUDIENCE;
  if (!env.PIER_OIDC_ISSUER || !clientId) return undefined;
  return {
    issuer: env.PIER_OIDC_ISSUER,
    clientId,
    providerName: env.PIER_OIDC_PROVIDER_NAME ?? new URL(env.PIER_OIDC_ISSUER).hostname,
    scopes: env.PIER_OIDC_SCOPES ?? 'openid email offline_access',
  };
}
