// Live log lines between the instances of compute, over NATS core: the instance leading log
// collection publishes each batch it reads on `pier.compute.logs.<service id>`, and every
// instance subscribes to the services its clients follow, while they do (LogFeed asks).
// Core, not JetStream: nothing here is kept or replayed; a follower that was not there reads
// history instead. The connection is kit's NatsLink to natsTarget(config), as every other
// long-lived NATS connection of the platform, with the service's own NATS user.
import { NatsLink, type Logger, type NatsServer } from '@pier/kit';
import type { LogFanout } from '../domain/logs/log-feed.ts';
import type { LogLine } from '../domain/logs/log-port.ts';

type Connection = NonNullable<NatsLink['connection']>;
type Subscription = ReturnType<Connection['subscribe']>;

/** Where a service's batches go. */
export const logSubject = (serviceId: string) => `pier.compute.logs.${serviceId}`;

/** Longest a follow waits for the broker to confirm its subscription (flush) before reading the recent lines anyway. */
const READY_WAIT_MS = 2_000;
/** NATS's default largest message, when the server has not said its own. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** Room for the envelope around the lines. */
const ENVELOPE_BYTES = 1024;
/** How long sending pauses after the broker refused it (an installation whose NATS permissions lack the subject). */
const REFUSED_PAUSE_MS = 10 * 60_000;

interface Receiver {
  serviceId: string;
  deliver: (key: string, lines: LogLine[]) => void;
  sub?: Subscription;
  closed: boolean;
}

interface Envelope {
  /** The sending instance: its own batches it delivered already. */
  from: string;
  key: string;
  lines: LogLine[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class NatsLogFanout implements LogFanout {
  private readonly link: NatsLink;
  private readonly receivers = new Set<Receiver>();
  private sendFailed = false;
  private refusedUntil = 0;

  constructor(
    server: NatsServer,
    /** This instance (its lease holder id). */
    private readonly self: string,
    private readonly log: Logger,
  ) {
    this.link = new NatsLink(
      server,
      (nc) => this.onConnected(nc),
      (err) => log.warn({ err: String(err) }, 'NATS cannot be reached: live log lines stay on the instance that collects them until it can; retrying'),
    );
  }

  start(): void {
    this.link.start();
  }

  stop(): Promise<void> {
    return this.link.stop();
  }

  /** Whether the connection to the broker is made (it connects in the background). */
  get connected(): boolean {
    return this.link.connection !== undefined;
  }

  send(serviceId: string, key: string, lines: LogLine[]): void {
    const nc = this.link.connection;
    if (!nc || lines.length === 0 || Date.now() < this.refusedUntil) return;
    try {
      for (const payload of this.envelopes(key, lines, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD)) nc.publish(logSubject(serviceId), payload);
      this.sendFailed = false;
    } catch (err) {
      // Said once until it works again: a broker away would otherwise log every batch.
      if (!this.sendFailed) this.log.warn({ err: String(err), service: serviceId }, 'live log lines could not be sent to the other instances');
      this.sendFailed = true;
    }
  }

  receive(serviceId: string, deliver: (key: string, lines: LogLine[]) => void): { ready: Promise<void>; close(): void } {
    const r: Receiver = { serviceId, deliver, closed: false };
    this.receivers.add(r);
    const nc = this.link.connection;
    // Not connected yet: subscribed once it is (onConnected); the follow does not wait for it.
    const ready = nc ? this.subscribe(nc, r) : Promise.resolve();
    return {
      ready,
      close: () => {
        r.closed = true;
        this.receivers.delete(r);
        r.sub?.unsubscribe();
      },
    };
  }

  private onConnected(nc: Connection): void {
    for (const r of this.receivers) if (!r.sub) void this.subscribe(nc, r);
    void this.watch(nc);
  }

  /** A refusal of our subjects (the deployment's NATS permissions lack them): said once, and sending pauses. */
  private async watch(nc: Connection): Promise<void> {
    for await (const status of nc.status()) {
      const subject = status.permissionContext?.subject ?? '';
      if (!subject.startsWith(logSubject(''))) continue;
      if (status.permissionContext?.operation === 'publish') {
        if (Date.now() >= this.refusedUntil) {
          this.log.warn(
            { subject },
            'NATS refuses live log lines to the other instances of compute (its permissions lack pier.compute.logs.>): followers there get no live lines',
          );
        }
        this.refusedUntil = Date.now() + REFUSED_PAUSE_MS;
      } else {
        this.log.warn({ subject }, "NATS refuses compute's subscription to live log lines (its permissions lack pier.compute.logs.>)");
      }
    }
  }

  /** Subscribes, and settles once the broker has the subscription (a flush), or after READY_WAIT_MS. */
  private async subscribe(nc: Connection, r: Receiver): Promise<void> {
    try {
      r.sub = nc.subscribe(logSubject(r.serviceId), {
        callback: (err, msg) => {
          if (!err && !r.closed) this.received(r, msg.data);
        },
      });
    } catch (err) {
      this.log.warn(
        { err: String(err), service: r.serviceId },
        "cannot subscribe to a service's live log lines; this follow gets only what this instance collects",
      );
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([nc.flush().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, READY_WAIT_MS)))]);
    clearTimeout(timer);
  }

  private received(r: Receiver, data: Uint8Array): void {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(decoder.decode(data)) as Envelope;
    } catch {
      return;
    }
    if (envelope.from === this.self || typeof envelope.key !== 'string' || !Array.isArray(envelope.lines)) return;
    r.deliver(envelope.key, envelope.lines);
  }

  /** The batch as messages no larger than the broker takes; a line too long for one alone is cut. */
  private *envelopes(key: string, lines: LogLine[], maxPayload: number): Generator<Uint8Array> {
    const head = `{"from":${JSON.stringify(this.self)},"key":${JSON.stringify(key)},"lines":[`;
    const room = maxPayload - ENVELOPE_BYTES - Buffer.byteLength(head);
    let parts: string[] = [];
    let size = 0;
    for (const line of lines) {
      let text = JSON.stringify(line);
      // At most 6 bytes a character once escaped: cut to what surely fits.
      if (Buffer.byteLength(text) > room) text = JSON.stringify({ ...line, message: line.message.slice(0, Math.floor(room / 6) - 256) });
      const n = Buffer.byteLength(text) + 1;
      if (parts.length > 0 && size + n > room) {
        yield encoder.encode(`${head}${parts.join(',')}]}`);
        parts = [];
        size = 0;
      }
      parts.push(text);
      size += n;
    }
    if (parts.length > 0) yield encoder.encode(`${head}${parts.join(',')}]}`);
  }
}
