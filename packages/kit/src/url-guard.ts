// The guard in front of every URL a caller chooses and Pier then fetches from inside its own
// network (a git build's repository): only public hosts, reached at the very address that was
// checked. Used by compute's builds. Uptime checks need none: their host is the platform's own
// (the service's URL on the edge) and the caller chooses only the path.
//
// Rules: `https:` only (`http:` when configured); no user info; the host is a name or an IP
// literal (WHATWG parsing already turns decimal, octal and hex IPv4 notations into dotted
// quads, so `http://2130706433/` is checked as 127.0.0.1); every address it resolves to must
// be public unicast (IPv4-mapped IPv6 is judged as the IPv4 inside). Hosts listed in
// `allowedHosts` skip the address rule (tests reach their local git server that way, and
// nothing else does). A redirect is a new URL and goes through the same check.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { InputError } from './errors.ts';

export interface UrlGuardOptions {
  /** Allow `http:` besides `https:` (tests; an installation whose forge has no TLS). */
  allowHttp?: boolean;
  /** Host names or IP addresses let through whatever they resolve to. Empty by default. */
  allowedHosts?: readonly string[];
  /** DNS servers (`ip` or `ip:port`) to resolve names with; the system's resolver when empty. */
  resolvers?: readonly string[];
  /** How the field is named in refusals (`repo_url`): a refusal is a 400 naming it. */
  field?: string;
}

/** A URL that passed the guard, and the address its connection must go to. */
export interface CheckedUrl {
  url: URL;
  /** The host without IPv6 brackets, lower case, without a trailing dot. */
  host: string;
  port: number;
  /** The checked address: connect here, never to a fresh lookup of `host`. */
  address: string;
  family: 4 | 6;
  /** The host is an IP literal (no name to pin). */
  literal: boolean;
}

/** Why a URL was refused: a 400 with `field` naming the URL's field. */
export class UrlRefusedError extends InputError {
  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`, 'url_not_allowed', { field });
    this.name = 'UrlRefusedError';
  }
}

const RANGE_WORDS: Record<string, string> = {
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (where cloud metadata services answer)',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (shared, RFC 6598) address',
  private: 'a private address',
  uniqueLocal: 'a unique-local (private) IPv6 address',
  reserved: 'a reserved address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
};

/** What an address that may not be fetched from is (`a private address`), or null when it is public unicast. */
export function refusedRange(address: string): { address: string; what: string } | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return { address, what: 'not an IP address' };
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // IPv4-mapped IPv6 (::ffff:127.0.0.1) reaches the IPv4 address it carries: judged as that.
    if (v6.isIPv4MappedAddress()) return refusedRange(v6.toIPv4Address().toString());
    // ::a.b.c.d (deprecated IPv4-compatible) has no range of its own in ipaddr.js.
    if (v6.parts.slice(0, 6).every((p) => p === 0) && v6.range() !== 'loopback' && v6.range() !== 'unspecified') {
      return { address: v6.toString(), what: RANGE_WORDS.ipv4Compatible! };
    }
  }
  const range = parsed.range();
  if (range === 'unicast') return null;
  return { address: parsed.toString(), what: RANGE_WORDS[range] ?? `in the special-purpose range "${range}"` };
}

/** `host` as compared with the allowlist: lower case, no brackets, no trailing dot. */
function normalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

export class UrlGuard {
  private readonly allowed: Set<string>;
  private readonly field: string;
  private readonly resolver?: dns.promises.Resolver;

  constructor(private readonly opts: UrlGuardOptions = {}) {
    this.allowed = new Set((opts.allowedHosts ?? []).map((h) => normalHost(h.trim())).filter(Boolean));
    this.field = opts.field ?? 'url';
    if (opts.resolvers?.length) {
      this.resolver = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
      this.resolver.setServers([...opts.resolvers]);
    }
  }

  private refuse(reason: string): never {
    throw new UrlRefusedError(this.field, reason);
  }

  /** The URL's rules without any lookup: scheme, user info, shape of the host. */
  parse(raw: string): URL {
    const text = raw.trim();
    if (!text) this.refuse('is empty');
    if (/^[\w.-]+@[\w.-]+:/.test(text)) this.refuse('scp-like addresses (user@host:path) use SSH; give an https:// URL');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      this.refuse('is not an absolute URL; give an https:// URL');
    }
    const schemes = this.opts.allowHttp ? ['https:', 'http:'] : ['https:'];
    if (!schemes.includes(url.protocol)) {
      this.refuse(`the scheme ${url.protocol.replace(/:$/, '')}: is not allowed; only ${schemes.map((s) => s.replace(/:$/, '')).join(' or ')} URLs are`);
    }
    if (url.username || url.password) this.refuse('must not carry credentials (user info): only public repositories are fetched');
    if (!url.hostname) this.refuse('has no host');
    const host = normalHost(url.hostname);
    if (host === 'localhost' || host.endsWith('.localhost')) this.refuse(`${host} is this machine`);
    return url;
  }

  /**
   * Checks `raw` and resolves its host; every address must pass (unless the host is
   * allowlisted). Returns the address to connect to.
   */
  async check(raw: string): Promise<CheckedUrl> {
    const url = this.parse(raw);
    const host = normalHost(url.hostname);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    const allowed = this.allowed.has(host);
    const literal = ipaddr.isValid(host);
    if (literal) {
      const family = ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4;
      const bad = allowed ? null : refusedRange(host);
      if (bad) this.refuse(`${bad.address} is ${bad.what}`);
      return { url, host, port, address: host, family, literal: true };
    }
    const addresses = await this.resolve(host);
    if (!allowed) {
      for (const a of addresses) {
        const bad = refusedRange(a.address);
        if (bad) this.refuse(`${host} resolves to ${bad.address}, ${bad.what}`);
      }
    }
    // IPv4 first: the address most networks route.
    const pick = addresses.find((a) => a.family === 4) ?? addresses[0]!;
    return { url, host, port, address: pick.address, family: pick.family, literal: false };
  }

  private async resolve(host: string): Promise<{ address: string; family: 4 | 6 }[]> {
    let found: { address: string; family: 4 | 6 }[] = [];
    try {
      if (this.resolver) {
        const settle = async (rr: 'A' | 'AAAA') => {
          try {
            return rr === 'A' ? await this.resolver!.resolve4(host) : await this.resolver!.resolve6(host);
          } catch (err) {
            if (['ENODATA', 'ENOTFOUND'].includes((err as NodeJS.ErrnoException).code ?? '')) return [];
            throw err;
          }
        };
        const [v4, v6] = await Promise.all([settle('A'), settle('AAAA')]);
        found = [...v4.map((address) => ({ address, family: 4 as const })), ...v6.map((address) => ({ address, family: 6 as const }))];
      } else {
        found = (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') this.refuse(`the host ${host} does not resolve`);
      this.refuse(`the host ${host} could not be resolved (${code ?? String(err)})`);
    }
    if (!found.length) this.refuse(`the host ${host} does not resolve`);
    return found;
  }

  /**
   * One request to a checked URL, connected to its checked address (the TLS name stays the
   * host's), following up to `maxRedirects` redirects, each checked like the first. Answers
   * the last response with its body unread, and the URL it came from.
   */
  async request(
    start: CheckedUrl,
    options: { method?: string; headers?: Record<string, string>; body?: string; maxRedirects?: number; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<{ final: CheckedUrl; response: http.IncomingMessage }> {
    let current = start;
    for (let hop = 0; ; hop++) {
      const response = await pinnedRequest(current, options);
      const location = response.headers.location;
      if (!location || ![301, 302, 303, 307, 308].includes(response.statusCode ?? 0)) return { final: current, response };
      response.resume();
      if (hop >= (options.maxRedirects ?? 5)) this.refuse(`redirected more than ${options.maxRedirects ?? 5} times`);
      const next = new URL(location, current.url).href;
      try {
        current = await this.check(next);
      } catch (err) {
        if (err instanceof UrlRefusedError) this.refuse(`redirects to ${next}, which is refused: ${err.message.slice(this.field.length + 2)}`);
        throw err;
      }
    }
  }
}

/** A lookup that answers the checked address whatever it is asked (Node 20 asks for `all` with autoSelectFamily). */
export function pinnedLookup(checked: Pick<CheckedUrl, 'address' | 'family'>): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as dns.LookupOptions).all)
      (callback as (e: null, a: dns.LookupAddress[]) => void)(null, [{ address: checked.address, family: checked.family }]);
    else callback(null, checked.address, checked.family);
  };
}

function pinnedRequest(
  checked: CheckedUrl,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; signal?: AbortSignal },
): Promise<http.IncomingMessage> {
  const client = checked.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      checked.url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        lookup: pinnedLookup(checked),
        // No proxy from the environment and no connection reuse across checks.
        agent: false,
        timeout: options.timeoutMs ?? 15_000,
        signal: options.signal,
      },
      resolve,
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${checked.host} within ${options.timeoutMs ?? 15_000} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}
