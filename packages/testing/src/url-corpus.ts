// URLs a caller may hand Pier to fetch from (a git build's repo_url, later an uptime check)
// that must be refused even with plain http allowed and nothing allowlisted: other schemes,
// credentials, and every way of writing an address that is not public unicast. Names under
// `pier.test` need TestDnsServer answering CORPUS_DNS (and the guard resolving through it).
import type { DnsRecords } from './dns-server.ts';

export interface RefusedUrl {
  url: string;
  /** What the refusal must say. */
  why: RegExp;
}

export const CORPUS_DNS: Record<string, DnsRecords> = {
  'loopback.pier.test': { A: ['127.0.0.1'] },
  'internal.pier.test': { A: ['10.1.2.3'] },
  'metadata.pier.test': { A: ['169.254.169.254'] },
  'v6-loopback.pier.test': { AAAA: ['::1'] },
  'mapped.pier.test': { AAAA: ['::ffff:10.0.0.1'] },
  'cgnat.pier.test': { A: ['100.64.12.1'] },
  // One public address and one private: every address must pass, not just the first.
  'mixed.pier.test': { A: ['93.184.216.34', '192.168.0.10'] },
  'public.pier.test': { A: ['93.184.216.34'] },
};

const scheme = /scheme .* is not allowed/;
const credentials = /credentials/;
const loopback = /loopback/;
const privateAddress = /private/;
const linkLocal = /link-local/;
const unspecified = /unspecified/;

export const REFUSED_URLS: RefusedUrl[] = [
  { url: 'file:///etc/passwd', why: scheme },
  { url: 'ssh://git@github.com/pier/app.git', why: scheme },
  { url: 'git@github.com:pier/app.git', why: /scp-like/ },
  { url: 'ext::sh -c touch% /tmp/pwned', why: scheme },
  { url: 'git://github.com/pier/app.git', why: scheme },
  { url: 'ftp://example.com/app.git', why: scheme },
  { url: 'javascript:alert(1)', why: scheme },
  { url: '/srv/git/app.git', why: /not an absolute URL/ },
  { url: 'https://user:secret@github.com/pier/app.git', why: credentials },
  { url: 'https://ghp_token@github.com/pier/app.git', why: credentials },
  { url: 'http://127.0.0.1/app.git', why: loopback },
  { url: 'http://127.1/app.git', why: loopback },
  { url: 'http://2130706433/app.git', why: loopback },
  { url: 'http://0x7f000001/app.git', why: loopback },
  { url: 'http://0177.0.0.1/app.git', why: loopback },
  { url: 'http://0x7f.0.0.1/app.git', why: loopback },
  { url: 'http://%31%32%37.0.0.1/app.git', why: loopback },
  { url: 'http://[::1]/app.git', why: loopback },
  { url: 'http://[::ffff:127.0.0.1]/app.git', why: loopback },
  { url: 'http://[::ffff:7f00:1]/app.git', why: loopback },
  { url: 'http://[::127.0.0.1]/app.git', why: /IPv4-compatible/ },
  { url: 'http://[64:ff9b::7f00:1]/app.git', why: /rfc6052/ },
  { url: 'http://localhost/app.git', why: /this machine/ },
  { url: 'http://api.localhost./app.git', why: /this machine/ },
  { url: 'http://0.0.0.0/app.git', why: unspecified },
  { url: 'http://0/app.git', why: unspecified },
  { url: 'http://[::]/app.git', why: unspecified },
  { url: 'http://10.0.0.1/app.git', why: privateAddress },
  { url: 'http://172.16.5.4/app.git', why: privateAddress },
  { url: 'http://192.168.1.1/app.git', why: privateAddress },
  { url: 'http://[fc00::1]/app.git', why: /unique-local/ },
  { url: 'http://[fd00:ec2::254]/latest/meta-data/', why: /unique-local/ },
  { url: 'http://169.254.169.254/latest/meta-data/', why: linkLocal },
  { url: 'http://0xa9fea9fe/latest/meta-data/', why: linkLocal },
  { url: 'http://2852039166/latest/meta-data/', why: linkLocal },
  { url: 'http://[::ffff:169.254.169.254]/latest/meta-data/', why: linkLocal },
  { url: 'http://[fe80::1]/app.git', why: linkLocal },
  { url: 'http://100.100.100.200/latest/meta-data/', why: /carrier-grade NAT/ },
  { url: 'http://100.64.0.1/app.git', why: /carrier-grade NAT/ },
  { url: 'http://224.0.0.1/app.git', why: /multicast/ },
  { url: 'http://[ff02::1]/app.git', why: /multicast/ },
  { url: 'http://255.255.255.255/app.git', why: /broadcast/ },
  { url: 'http://192.0.2.10/app.git', why: /reserved/ },
  { url: 'http://loopback.pier.test/app.git', why: /loopback.pier.test resolves to 127.0.0.1, a loopback/ },
  { url: 'http://internal.pier.test/app.git', why: privateAddress },
  { url: 'http://metadata.pier.test/latest/meta-data/', why: linkLocal },
  { url: 'http://v6-loopback.pier.test/app.git', why: loopback },
  { url: 'http://mapped.pier.test/app.git', why: privateAddress },
  { url: 'http://cgnat.pier.test/app.git', why: /carrier-grade NAT/ },
  { url: 'http://mixed.pier.test/app.git', why: /mixed.pier.test resolves to 192.168.0.10, a private/ },
  { url: 'http://nowhere.pier.test/app.git', why: /does not resolve/ },
];
