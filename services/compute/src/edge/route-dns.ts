// The DNS the docker edge routes by. Caddy's one dynamic route (cluster/caddy-config.ts)
// asks, for each request's Host, for the SRV records of that very name, and proxies to
// the targets they give (cached a moment by Caddy, kept while this server is away); it
// asks here for the targets' addresses too. So a service created, deleted or given a
// domain changes what this server answers, never Caddy's configuration: no configuration
// load, no connection Caddy closes under a client.
//
// It answers SRV and A questions for the names `lookup` knows (NXDOMAIN otherwise; NOERROR
// and no record for other types of a known name), authoritatively, over UDP, in answers
// that fit the 1,232 bytes every resolver accepts (RFC 9715); records that would not fit
// are left out (a service's replicas number far fewer). It listens where only the edge
// container reaches it (Docker's default bridge, as the activator does).
import dgram from 'node:dgram';
import type { Logger } from '@pier/kit';

export interface SrvRecord {
  /** A name the edge resolves itself (Docker's DNS, its /etc/hosts). */
  target: string;
  port: number;
}

/** What a name is: a host's SRV records, or a target's IPv4 address. */
export type RouteName = { srv: SrvRecord[] } | { ipv4: string };

export interface RouteDnsOptions {
  /** What a name (lowercase, no trailing dot) is; null: no such name. */
  lookup(name: string): RouteName | null | Promise<RouteName | null>;
  logger: Logger;
}

const TYPE_A = 1;
const TYPE_SRV = 33;
const CLASS_IN = 1;
const RCODE_FORMERR = 1;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;
const RCODE_NOTIMP = 4;
const MAX_UDP = 1232;

interface Question {
  id: number;
  /** Flags of the query: opcode and RD are echoed. */
  flags: number;
  name: string;
  type: number;
  klass: number;
  /** The question section as it came (echoed byte for byte: resolvers compare it). */
  raw: Buffer;
}

/** The one question of a query; null when the packet is not one a resolver sends. */
export function parseQuestion(msg: Buffer): Question | null {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return null;
  const flags = msg.readUInt16BE(2);
  if (flags & 0x8000) return null; // a response, not a query
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const len = msg[at];
    if (len === undefined || len > 63) return null; // no compression in a question
    at += 1;
    if (len === 0) break;
    if (at + len > msg.length) return null;
    labels.push(msg.toString('latin1', at, at + len));
    at += len;
  }
  if (at + 4 > msg.length) return null;
  return {
    id: msg.readUInt16BE(0),
    flags,
    name: labels.join('.'),
    type: msg.readUInt16BE(at),
    klass: msg.readUInt16BE(at + 2),
    raw: msg.subarray(12, at + 4),
  };
}

function encodeName(name: string): Buffer {
  const parts = name.replace(/\.$/, '').split('.').filter(Boolean);
  return Buffer.concat([...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'latin1')])), Buffer.from([0])]);
}

function addressRecord(ipv4: string): Buffer {
  const rr = Buffer.alloc(12 + 4);
  rr.writeUInt16BE(0xc00c, 0);
  rr.writeUInt16BE(TYPE_A, 2);
  rr.writeUInt16BE(CLASS_IN, 4);
  rr.writeUInt32BE(0, 6);
  rr.writeUInt16BE(4, 10);
  ipv4.split('.').forEach((octet, i) => rr.writeUInt8(Number(octet), 12 + i));
  return rr;
}

/** The response to `q`: its rcode and the records (SRV, or one A), as many as fit. */
export function encodeResponse(q: Question, rcode: number, records: SrvRecord[], ipv4: string | null = null): Buffer {
  const answers: Buffer[] = ipv4 ? [addressRecord(ipv4)] : [];
  let size = 12 + q.raw.length;
  for (const r of records) {
    const target = encodeName(r.target);
    const rr = Buffer.alloc(12 + 6);
    rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(TYPE_SRV, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(0, 6); // TTL 0: Caddy keeps it for its own refresh interval, nothing else should
    rr.writeUInt16BE(6 + target.length, 10);
    rr.writeUInt16BE(0, 12); // priority
    rr.writeUInt16BE(0, 14); // weight
    rr.writeUInt16BE(r.port, 16);
    const full = Buffer.concat([rr, target]);
    if (size + full.length > MAX_UDP) break;
    size += full.length;
    answers.push(full);
  }
  const header = Buffer.alloc(12);
  header.writeUInt16BE(q.id, 0);
  // QR, the query's opcode, AA, the query's RD; no recursion offered.
  header.writeUInt16BE(0x8000 | (q.flags & 0x7800) | 0x0400 | (q.flags & 0x0100) | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, q.raw, ...answers]);
}

export class RouteDns {
  private readonly socket = dgram.createSocket('udp4');

  constructor(private readonly opts: RouteDnsOptions) {
    this.socket.on('message', (msg, from) => void this.reply(msg, from));
    this.socket.on('error', (err) => opts.logger.error({ err: String(err) }, 'edge route DNS: socket error'));
  }

  async listen(host: string, port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.socket.once('error', reject);
      this.socket.bind(port, host, () => {
        this.socket.off('error', reject);
        resolve();
      });
    });
    return this.socket.address().port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private async reply(msg: Buffer, from: dgram.RemoteInfo): Promise<void> {
    const q = parseQuestion(msg);
    if (!q) {
      // Answer what can be answered (a header) so a resolver does not wait on us.
      if (msg.length >= 12 && !(msg.readUInt16BE(2) & 0x8000)) {
        const header = Buffer.from(msg.subarray(0, 12));
        header.writeUInt16BE(0x8000 | RCODE_FORMERR, 2);
        header.fill(0, 4);
        this.socket.send(header, from.port, from.address);
      }
      return;
    }
    let rcode = 0;
    let records: SrvRecord[] = [];
    let ipv4: string | null = null;
    if (((q.flags >> 11) & 0xf) !== 0) rcode = RCODE_NOTIMP;
    else {
      try {
        const found = await this.opts.lookup(q.name.toLowerCase().replace(/\.$/, ''));
        if (found === null) rcode = RCODE_NXDOMAIN;
        else if (q.klass === CLASS_IN && q.type === TYPE_SRV && 'srv' in found) records = found.srv;
        else if (q.klass === CLASS_IN && q.type === TYPE_A && 'ipv4' in found) ipv4 = found.ipv4;
      } catch (err) {
        this.opts.logger.error({ err: String(err), name: q.name }, 'edge route DNS: no answer');
        rcode = RCODE_SERVFAIL;
      }
    }
    this.socket.send(encodeResponse(q, rcode, records, ipv4), from.port, from.address);
  }
}
