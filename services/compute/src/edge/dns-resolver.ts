// DnsLookup over Node's resolver (c-ares), pointed at the configured servers: answers come
// from DNS itself, not from the host's files or a cache of ours.
import { promises as dns } from 'node:dns';
import { DnsUnavailableError, type DnsLookup } from '../domain/hostnames/dns-port.ts';

/** Answers that mean "no such record" rather than "could not ask". */
const ABSENT = new Set(['ENODATA', 'ENOTFOUND']);

export class ResolverDns implements DnsLookup {
  private readonly resolver = new dns.Resolver({ timeout: 3000, tries: 2 });

  constructor(servers: string[]) {
    if (servers.length) this.resolver.setServers(servers);
  }

  private async ask<T>(what: string, fn: () => Promise<T>, empty: T): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code && ABSENT.has(code)) return empty;
      throw new DnsUnavailableError(`DNS lookup of ${what} failed (${code ?? String(err)})`);
    }
  }

  async txt(name: string): Promise<string[]> {
    const records = await this.ask(`TXT ${name}`, () => this.resolver.resolveTxt(name), []);
    return records.map((chunks) => chunks.join(''));
  }

  async cname(name: string): Promise<string | null> {
    const records = await this.ask(`CNAME ${name}`, () => this.resolver.resolveCname(name), []);
    return records[0] ? records[0].toLowerCase().replace(/\.$/, '') : null;
  }

  async addresses(name: string): Promise<string[]> {
    const [v4, v6] = await Promise.all([
      this.ask(`A ${name}`, () => this.resolver.resolve4(name), []),
      this.ask(`AAAA ${name}`, () => this.resolver.resolve6(name), []),
    ]);
    return [...v4, ...v6];
  }
}
