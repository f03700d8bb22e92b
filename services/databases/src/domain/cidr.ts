import { isIPv4, isIPv6 } from 'node:net';
import { InputError } from '@pier/kit';

// CIDR blocks of the IP allowlist: parsed, checked and normalised to the network
// address (`10.1.2.3/8` -> `10.0.0.0/8`), so equal blocks compare equal and every
// engine receives a canonical form. A bare address means a single host (/32 or /128).

export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

function invalid(message: string): InputError {
  return new InputError(`cidr: ${message}`, 'invalid_request', { field: 'cidr' });
}

function v4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

function v6Bytes(text: string): Uint8Array {
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) becomes its two hex groups first.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4Bytes(v4[1]!);
    text = text.slice(0, v4.index) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [left, right] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const l = parse(left);
  const r = parse(right);
  const groups = right === undefined ? l : [...l, ...new Array<number>(8 - l.length - r.length).fill(0), ...r];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}

export function parseCidr(input: string): Cidr {
  const text = input.trim();
  if (text.length === 0) throw invalid('is required');
  const slash = text.indexOf('/');
  const addr = slash === -1 ? text : text.slice(0, slash);
  const family = isIPv4(addr) ? 4 : isIPv6(addr) ? 6 : 0;
  if (family === 0) throw invalid(`"${input}" is not an IPv4 or IPv6 address or CIDR block`);
  if (family === 6 && addr.includes('%')) throw invalid('zone indexes are not allowed');
  const max = family === 4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) throw invalid(`prefix length must be 0 to ${max} for IPv${family}`);
    prefix = Number(p);
  }
  const bytes = family === 4 ? v4Bytes(addr) : v6Bytes(addr);
  return { family, bytes: mask(bytes, prefix), prefix };
}

function mask(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, prefix - i * 8));
    out[i]! &= bits === 0 ? 0 : (0xff << (8 - bits)) & 0xff;
  }
  return out;
}

export function addressText(c: Pick<Cidr, 'family' | 'bytes'>): string {
  if (c.family === 4) return [...c.bytes].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((c.bytes[i]! << 8) | c.bytes[i + 1]!).toString(16));
  // RFC 5952: the URL parser already compresses the longest run of zero groups.
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}

export function cidrText(c: Cidr): string {
  return `${addressText(c)}/${c.prefix}`;
}

/** The canonical text of a CIDR, or an InputError naming `cidr`. */
export function normaliseCidr(input: string): string {
  return cidrText(parseCidr(input));
}

export function contains(block: Cidr, address: string): boolean {
  const a = parseCidr(address);
  if (a.family !== block.family) return false;
  const masked = mask(a.bytes, block.prefix);
  return masked.every((b, i) => b === block.bytes[i]);
}

/** IPv4 netmask of a prefix (`/24` -> `255.255.255.0`), for MySQL account hosts. */
export function netmaskV4(prefix: number): string {
  const m = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return [m >>> 24, (m >>> 16) & 0xff, (m >>> 8) & 0xff, m & 0xff].join('.');
}
