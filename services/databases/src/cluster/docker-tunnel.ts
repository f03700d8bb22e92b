import { Duplex } from 'node:stream';
import type Docker from 'dockerode';

// The SQL console's way into a docker-run database as the database's own account. That
// account is refused from the VPC network's gateway (where the control plane, but also
// the host's clients and docker-proxy's relayed external traffic, come from) unless the
// allowlist admits external clients there, and only a password tells the control plane
// from those. So the console does not dial the container's address: it enters the
// container with `docker exec` (which only whoever controls the Docker engine can do) and
// connects to the server on the container's own loopback, which admits the app user
// with its password. The engine's driver speaks its protocol over this stream as over a
// socket.

/**
 * Relays stdin to 127.0.0.1:$1 and back; either side closing ends the whole relay. The
 * relay reaps its two processes before it exits, whatever ends it (Docker signals an
 * exec whose caller went away): an orphan is adopted by the container's first process,
 * the database server itself, and PostgreSQL takes an unknown child that died of a signal
 * for a crashed backend and restarts every session. Nothing is signalled but those two,
 * by pid (never `kill 0`: an exec may share the server's process group).
 */
const RELAY = [
  'exec 3<>"/dev/tcp/127.0.0.1/$1" 4<&0 || exit 1',
  // From a copy of stdin: a background job's own stdin is /dev/null.
  'cat <&4 >&3 4<&- &',
  'writer=$!',
  'cat <&3 4<&- &',
  'reader=$!',
  'trap \'kill "$writer" "$reader" 2>/dev/null; wait; exit 0\' TERM HUP INT PIPE',
  'wait -n',
  'kill "$writer" "$reader" 2>/dev/null',
  'wait',
  'exit 0',
].join('\n');

/** Docker's multiplexed exec output: an 8-byte header (stream, 0, 0, 0, size BE) per frame. */
const HEADER = 8;

export class ExecTunnel extends Duplex {
  private socket?: Duplex;
  private opening?: Promise<Duplex>;
  private buffered: Buffer = Buffer.alloc(0);
  private stderr = '';

  constructor(
    private readonly docker: Docker,
    private readonly container: string,
    private readonly port: number,
  ) {
    super();
    // Opened at once: mysql2 just starts reading, pg calls connect() first. A server that
    // cannot be entered is one that cannot be reached, as the drivers' callers read it.
    this.open().catch((err: unknown) => {
      const e = new Error(`cannot reach the server through docker exec: ${(err as Error).message}`) as Error & { code: string };
      e.code = 'ECONNREFUSED';
      this.destroy(e);
    });
  }

  /** pg calls connect(port, host) and waits for 'connect'; the target is fixed at construction. */
  connect(): this {
    this.open().then(
      () => this.emit('connect'),
      () => undefined, // destroyed with the error already
    );
    return this;
  }

  // Socket methods the drivers call: nothing to tune on an exec stream.
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  private open(): Promise<Duplex> {
    this.opening ??= (async () => {
      const exec = await this.docker.getContainer(this.container).exec({
        Cmd: ['bash', '-c', RELAY, 'pier-console-tunnel', String(this.port)],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        // Nobody's rights suffice to open a TCP connection; none of the server's files are needed.
        User: 'nobody',
      });
      const socket = (await exec.start({ hijack: true, stdin: true })) as unknown as Duplex;
      // Given up on while it opened (a connect timeout): the relay ends with its stdin.
      if (this.destroyed) socket.destroy();
      socket.on('data', (chunk: Buffer) => this.demux(chunk));
      socket.on('end', () => this.push(null));
      socket.on('close', () => {
        if (!this.destroyed) this.push(null);
      });
      socket.on('error', (err: Error) => this.destroy(err));
      this.socket = socket;
      return socket;
    })();
    return this.opening;
  }

  private demux(chunk: Buffer): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    while (this.buffered.length >= HEADER) {
      const size = this.buffered.readUInt32BE(4);
      if (this.buffered.length < HEADER + size) return;
      const payload = this.buffered.subarray(HEADER, HEADER + size);
      // Stream 1 is stdout (the server's bytes); 2 is the relay's stderr, kept for errors.
      if (this.buffered[0] === 1) this.push(payload);
      else if (this.buffered[0] === 2) this.stderr = (this.stderr + payload.toString()).slice(-500);
      this.buffered = this.buffered.subarray(HEADER + size);
    }
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.open().then(
      (socket) => socket.write(chunk, done),
      (err: unknown) => done(err as Error),
    );
  }

  override _final(done: (err?: Error | null) => void): void {
    // Ending stdin ends the relay, which closes the server connection.
    if (!this.socket) return done();
    this.socket.end(done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.socket?.destroy();
    if (err && this.stderr) err.message += ` (${this.stderr.trim()})`;
    done(err);
  }
}
