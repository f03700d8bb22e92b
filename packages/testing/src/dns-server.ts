// A DNS server for tests, on a loopback UDP port: A and AAAA answers from a table the test
// sets (and changes, for a rebinding case), NXDOMAIN for names it does not hold. Just enough
// of RFC 1035 for Node's resolver (c-ares) pointed at it with `setServers(['127.0.0.1:<port>'])`.
import dgram from 'node:dgram';
import ipaddr from 'ipaddr.js';

export interface DnsRecords {
  A?: string[];
  AAAA?: string[];
}

const TYPE = { A: 1, AAAA: 28 } as const;

export class TestDnsServer {
  private readonly socket = dgram.createSocket('udp4');
  private readonly records = new Map<string, DnsRecords>();
  /** Every question received, as `<name> <A|AAAA|type number>`. */
  readonly queries: string[] = [];
  port = 0;

  /** Sets (replaces) the answers for `name`. */
  set(name: string, records: DnsRecords): this {
    this.records.set(name.toLowerCase().replace(/\.$/, ''), records);
    return this;
  }

  /** `ip:port`, as a resolver list takes it. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.socket.on('message', (msg, from) => {
      const answer = this.answer(msg);
      if (answer) this.socket.send(answer, from.port, from.address);
    });
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', () => resolve()));
    this.port = this.socket.address().port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private answer(msg: Buffer): Buffer | undefined {
    if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
    // The question: length-prefixed labels up to a zero byte, then type and class.
    const labels: string[] = [];
    let at = 12;
    while (at < msg.length && msg[at] !== 0) {
      const len = msg[at]!;
      labels.push(msg.subarray(at + 1, at + 1 + len).toString('ascii'));
      at += len + 1;
    }
    const questionEnd = at + 5;
    if (questionEnd > msg.length) return undefined;
    const qtype = msg.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    this.queries.push(`${name} ${qtype === TYPE.A ? 'A' : qtype === TYPE.AAAA ? 'AAAA' : qtype}`);
    const entry = this.records.get(name);
    const values = entry ? ((qtype === TYPE.A ? entry.A : qtype === TYPE.AAAA ? entry.AAAA : undefined) ?? []) : [];
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(entry ? 0x8180 : 0x8183, 2); // a response, recursion available; NXDOMAIN for unknown names
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(values.length, 6);
    const answers = values.map((value) => {
      const rdata = Buffer.from(ipaddr.parse(value).toByteArray());
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // a pointer to the question's name
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(1, 6); // TTL 1 s: tests change answers
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    return Buffer.concat([header, msg.subarray(12, questionEnd), ...answers]);
  }
}
