import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';

/** A stream server to relay to: a TCP port, or a unix socket. */
export type LinkTarget = { host: string; port: number } | { path: string };

export interface SocketLink {
  /**
   * Where clients connect: `127.0.0.1:<port>` for a TCP target (known after the first
   * `up()`, and the same after every later one), the socket's path for a unix target.
   */
  readonly address: string;
  /** Starts relaying (again), at the same address. */
  up(): Promise<void>;
  /** Cuts every open connection and stops listening: the dependency is gone until `up()`. */
  down(): Promise<void>;
  /**
   * The open connections stop relaying in both directions without being closed, as a peer
   * that vanished without a word (a pod deleted behind a Service's address); new
   * connections relay as before.
   */
  freeze(): void;
  /**
   * Arms a trip: the first client bytes that match `pattern` (an HTTP request line, say)
   * are not relayed; the link goes down instead, in the middle of the client's work.
   * Resolves once it has.
   */
  cutOn(pattern: RegExp): Promise<void>;
}

/**
 * A relay in front of a real server (NATS, the Docker engine, ...), so a test can take that
 * dependency away (`down`) and bring it back (`up`) under a running service, which keeps
 * the one address it was given. A TCP target is relayed on a loopback port, a unix socket
 * on a socket file of its own.
 */
export function socketLink(target: LinkTarget): SocketLink {
  const socketPath = 'path' in target ? path.join(os.tmpdir(), `pier-link-${randomBytes(4).toString('hex')}.sock`) : undefined;
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  let trip: { pattern: RegExp; fired: () => void } | undefined;
  let pipes: { client: net.Socket; watch: Transform; upstream: net.Socket }[] = [];
  const link: SocketLink = {
    get address() {
      return socketPath ?? `127.0.0.1:${port}`;
    },
    async up() {
      if (socketPath) await rm(socketPath, { force: true });
      server = net.createServer((client) => {
        const upstream = 'path' in target ? net.connect(target.path) : net.connect(target.port, target.host);
        sockets.add(client).add(upstream);
        const watch = new Transform({
          transform(chunk: Buffer, _enc, done) {
            const armed = trip;
            if (armed && armed.pattern.test(chunk.toString('latin1'))) {
              trip = undefined;
              void link.down().then(armed.fired);
              return done();
            }
            done(null, chunk);
          },
        });
        client.pipe(watch).pipe(upstream).pipe(client);
        pipes.push({ client, watch, upstream });
        const drop = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      await new Promise<void>((resolve) => (socketPath ? server!.listen(socketPath, resolve) : server!.listen(port, '127.0.0.1', resolve)));
      if (!socketPath) port = (server.address() as net.AddressInfo).port;
    },
    async down() {
      for (const s of sockets) s.destroy();
      sockets.clear();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
      if (socketPath) await rm(socketPath, { force: true });
    },
    freeze() {
      for (const { client, watch, upstream } of pipes) {
        client.unpipe(watch);
        watch.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      pipes = [];
    },
    cutOn(pattern) {
      return new Promise<void>((fired) => (trip = { pattern, fired }));
    },
  };
  return link;
}
