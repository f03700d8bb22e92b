// Pier's PostgreSQL listener for clients outside (docker, with PIER_POSTGRES_EXTERNAL_DOMAIN):
// one port (5432) for every database, routed by the TLS server name libpq sends (SNI,
// libpq 14 and later), as Neon's proxy routes: `<short_id>.<domain>` reaches the server,
// `<short_id>-ro.<domain>` a replica. It never takes part in TLS: it answers the client's
// SSLRequest itself, reads the name from the ClientHello, asks the backend for TLS in the
// client's place, hands it the ClientHello and from then on copies bytes both ways, so the
// session is encrypted end to end between the client and the database server.
//
// The IP allowlist is judged here, on the client's own address (the server only sees the
// listener's); `route` says whether the client may reach the database at all.
//
// What it cannot route, and refuses: a client that does not ask for TLS (sslmode=disable:
// it is told to use sslmode=require), a ClientHello without a name (libpq before 14, or
// sslsni=0), a name outside the domain. A refusal after the TLS handshake began can only
// close the connection (the client reports an SSL error); the reason goes to the log.
// Query cancellation (a CancelRequest arrives on a new connection without TLS) is not routed.
import net from 'node:net';
import type { Logger } from '@pier/kit';
import { MAX_CLIENT_HELLO, readClientHello } from './tls-client-hello.ts';

export interface ListenerTarget {
  host: string;
  port: number;
}

export type RouteAnswer = { target: ListenerTarget } | { refused: string };

export interface PostgresListenerOptions {
  /** PIER_POSTGRES_EXTERNAL_DOMAIN: server names are `<short_id>[-ro].<domain>`. */
  domain: string;
  /** Where a client at `clientAddress` may go for the database `shortId` (a replica for `readOnly`), or why not. */
  route(shortId: string, readOnly: boolean, clientAddress: string): Promise<RouteAnswer>;
  logger: Logger;
  /** How long a client has to ask for TLS and send its ClientHello. */
  handshakeTimeoutMs?: number;
}

// PostgreSQL's protocol (https://www.postgresql.org/docs/current/protocol-message-formats.html).
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const SSL_REQUEST_PACKET = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
const TLS_HANDSHAKE = 0x16;

/** A FATAL ErrorResponse, for a client still speaking plain PostgreSQL. */
export function fatalError(sqlstate: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', sqlstate],
      ['M', message],
    ].map(([code, text]) => Buffer.concat([Buffer.from(code!, 'ascii'), Buffer.from(text!, 'utf8'), Buffer.from([0])])),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0, 'ascii');
  head.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([head, fields]);
}

const TLS_REQUIRED = fatalError(
  '28000',
  "Pier's external PostgreSQL endpoint needs TLS with the database's host name: connect with sslmode=require (libpq 14 or later sends the name)",
);

/** `<short_id>` and whether it is the `-ro` name, for a server name in `domain`; null otherwise. */
export function databaseOfServerName(serverName: string, domain: string): { shortId: string; readOnly: boolean } | null {
  const suffix = `.${domain.toLowerCase()}`;
  if (!serverName.endsWith(suffix)) return null;
  const m = /^([0-9a-f]{8})(-ro)?$/.exec(serverName.slice(0, -suffix.length));
  return m ? { shortId: m[1]!, readOnly: m[2] !== undefined } : null;
}

/** The client's address as the allowlist reads it (an IPv4 client of a dual-stack socket without its `::ffff:`). */
function clientAddressOf(socket: net.Socket): string {
  const a = socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') && net.isIPv4(a.slice(7)) ? a.slice(7) : a;
}

export class PostgresListener {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly opts: PostgresListenerOptions) {
    this.server = net.createServer((client) => this.accept(client));
  }

  /** Listens; resolves with the port (an ephemeral one for 0). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private accept(client: net.Socket): void {
    this.track(client);
    client.setNoDelay(true);
    client.on('error', () => client.destroy());
    const timer = setTimeout(() => client.destroy(), this.opts.handshakeTimeoutMs ?? 10_000);
    let pending = Buffer.alloc(0);
    let askedTls = false;
    let refusedGss = false;
    const onData = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (!askedTls) {
        if (pending.length < 8) return;
        let code = pending.readInt32BE(4);
        if (pending.readInt32BE(0) === 8 && code === GSSENC_REQUEST && !refusedGss) {
          // No GSSAPI encryption here; libpq then asks for TLS on the same connection. Once:
          // a client asking again is not libpq, and is treated as the protocol error below.
          refusedGss = true;
          pending = pending.subarray(8);
          client.write('N');
          if (pending.length < 8) return;
          code = pending.readInt32BE(4);
        }
        if (pending.readInt32BE(0) !== 8 || code !== SSL_REQUEST) {
          clearTimeout(timer);
          client.off('data', onData);
          // A CancelRequest or a plain StartupMessage: nothing here says which database.
          if (pending[0] === TLS_HANDSHAKE) client.destroy();
          else client.end(TLS_REQUIRED);
          return;
        }
        askedTls = true;
        pending = pending.subarray(8);
        client.write('S');
      }
      const hello = readClientHello(pending);
      if (hello.kind === 'partial') {
        if (pending.length > MAX_CLIENT_HELLO) client.destroy();
        return;
      }
      clearTimeout(timer);
      client.off('data', onData);
      client.pause();
      if (hello.kind === 'invalid') return this.refuse(client, `not a TLS ClientHello: ${hello.why}`);
      const wanted = hello.serverName ? databaseOfServerName(hello.serverName, this.opts.domain) : null;
      if (!wanted) return this.refuse(client, hello.serverName ? `a server name outside ${this.opts.domain}: ${hello.serverName}` : 'no server name (SNI)');
      void this.connect(client, wanted, pending);
    };
    client.on('data', onData);
  }

  private refuse(client: net.Socket, why: string, shortId?: string): void {
    this.opts.logger.info({ client: clientAddressOf(client), database: shortId, why }, 'postgres listener: refused a connection');
    client.destroy();
  }

  /** Routes the client to its database: TLS asked of the backend, the ClientHello handed on, then bytes copied both ways. */
  private async connect(client: net.Socket, wanted: { shortId: string; readOnly: boolean }, hello: Buffer): Promise<void> {
    let answer: RouteAnswer;
    try {
      answer = await this.opts.route(wanted.shortId, wanted.readOnly, clientAddressOf(client));
    } catch (err) {
      return this.refuse(client, `routing failed: ${String(err)}`, wanted.shortId);
    }
    if ('refused' in answer) return this.refuse(client, answer.refused, wanted.shortId);
    if (client.destroyed) return;
    const backend = net.connect(answer.target.port, answer.target.host);
    this.track(backend);
    backend.setNoDelay(true);
    const both = () => {
      client.destroy();
      backend.destroy();
    };
    backend.on('error', (err) => {
      this.opts.logger.warn({ database: wanted.shortId, err: String(err) }, 'postgres listener: the database server cannot be reached');
      both();
    });
    client.on('close', both);
    backend.on('close', both);
    backend.once('connect', () => backend.write(SSL_REQUEST_PACKET));
    backend.once('data', (first: Buffer) => {
      if (first[0] !== 'S'.charCodeAt(0)) {
        this.opts.logger.warn({ database: wanted.shortId }, 'postgres listener: the database server does not offer TLS');
        return both();
      }
      backend.write(hello);
      if (first.length > 1) client.write(first.subarray(1));
      client.pipe(backend);
      backend.pipe(client);
      client.resume();
    });
  }
}
