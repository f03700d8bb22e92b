/**
 * A NATS client speaking the text protocol on a plain socket, for tests that must see
 * exactly what the server answers (`-ERR 'Permissions Violation ...'`, `-ERR
 * 'Authorization Violation'`) and that run where the `nats` package is not a dependency.
 *
 *   const c = await natsWire('nats://127.0.0.1:4222', { user: 'compute', password });
 *   c.sub('pier.events.>'); c.pub('pier.auth.epoch.x', '{}'); await c.ping();
 *   c.errors   // every -ERR line, in order
 *   c.messages // every MSG received: { subject, data }
 */
import net from 'node:net';

export interface WireMessage {
  subject: string;
  data: string;
}

export interface NatsWire {
  errors: string[];
  messages: WireMessage[];
  /** Whether the server closed the connection. */
  closed: boolean;
  sub(subject: string): void;
  pub(subject: string, data: string, reply?: string): void;
  /** Resolves at the server's PONG: everything sent before was processed. */
  ping(): Promise<void>;
  close(): void;
}

export async function natsWire(url: string, auth: { user?: string; password?: string } = {}): Promise<NatsWire> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const c: NatsWire & { pongs: (() => void)[]; sid: number } = {
    errors: [],
    messages: [],
    closed: false,
    pongs: [],
    sid: 0,
    sub(subject) {
      socket.write(`SUB ${subject} ${++c.sid}\r\n`);
    },
    pub(subject, data, reply) {
      socket.write(`PUB ${subject}${reply ? ` ${reply}` : ''} ${Buffer.byteLength(data)}\r\n${data}\r\n`);
    },
    ping() {
      return new Promise<void>((resolve, reject) => {
        if (c.closed) return reject(new Error(`connection closed: ${c.errors.join('; ')}`));
        c.pongs.push(resolve);
        socket.write('PING\r\n');
      });
    },
    close() {
      socket.destroy();
    },
  };
  let buffer = Buffer.alloc(0);
  let pending: { subject: string; size: number } | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (pending) {
        if (buffer.length < pending.size + 2) return;
        c.messages.push({ subject: pending.subject, data: buffer.subarray(0, pending.size).toString() });
        buffer = buffer.subarray(pending.size + 2);
        pending = undefined;
        continue;
      }
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      const line = buffer.subarray(0, end).toString();
      buffer = buffer.subarray(end + 2);
      if (line.startsWith('MSG ')) {
        const parts = line.split(' ');
        pending = { subject: parts[1]!, size: Number(parts[parts.length - 1]) };
      } else if (line.startsWith('-ERR')) c.errors.push(line);
      else if (line === 'PING') socket.write('PONG\r\n');
      else if (line === 'PONG') c.pongs.shift()?.();
    }
  });
  const gone = () => {
    c.closed = true;
    for (const p of c.pongs.splice(0)) p();
  };
  socket.on('close', gone);
  socket.on('error', gone);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(`CONNECT ${JSON.stringify({ verbose: false, pedantic: false, user: auth.user, pass: auth.password })}\r\n`);
  await c.ping();
  return c;
}
