import { AckPolicy, connect, DeliverPolicy, nanos, type JsMsg, type NatsConnection } from 'nats';
import { ensureEventsStream, EVENTS_STREAM, natsConnectOptions, type Background, type Logger, type NatsServer } from '@pier/kit';
import type { EventStore } from '../domain/store-port.ts';
import { eventOfMessage } from './normalize.ts';

export interface ConsumerOptions {
  /** The durable consumer's name: one per installation (installations may share a NATS). */
  durable: string;
  deliverFrom: 'all' | 'new' | Date;
  ackWaitSeconds: number;
  /** Messages fetched, stored in one transaction, then acknowledged. */
  batch?: number;
}

/**
 * Reads PIER_EVENTS through a durable pull consumer and stores each event once: a batch is
 * committed, then acknowledged. A crash between the two has JetStream deliver the batch
 * again after the ack wait, and the events' ids (unique) keep it from being stored twice;
 * a message never acknowledged is never lost. One instance consumes at a time (leaderOnly),
 * so events are stored, and their seqs committed, in one order.
 */
export class EventConsumer implements Background {
  private stopped = true;
  private loop?: Promise<void>;
  private nc?: NatsConnection;

  constructor(
    private readonly nats: NatsServer,
    private readonly store: EventStore,
    private readonly log: Logger,
    private readonly opts: ConsumerOptions,
    /** Called after a batch with new events was committed. */
    private readonly stored: () => void,
  ) {}

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async run(): Promise<void> {
    let failing = false;
    while (!this.stopped) {
      try {
        await this.consume();
      } catch (err) {
        if (this.stopped) break;
        if (!failing) this.log.warn({ err: String(err) }, 'events consumer failed; retrying every second (said once)');
        failing = true;
        await new Promise((r) => setTimeout(r, 1000));
      } finally {
        await this.nc?.close().catch(() => undefined);
        this.nc = undefined;
      }
    }
  }

  private async consume(): Promise<void> {
    const nc = (this.nc = await connect({ ...natsConnectOptions(this.nats), timeout: 2000, maxReconnectAttempts: -1, reconnectTimeWait: 500 }));
    await ensureEventsStream(nc);
    const jsm = await nc.jetstreamManager();
    try {
      await jsm.consumers.info(EVENTS_STREAM, this.opts.durable);
    } catch {
      await jsm.consumers.add(EVENTS_STREAM, {
        durable_name: this.opts.durable,
        ack_policy: AckPolicy.Explicit,
        ...(this.opts.deliverFrom instanceof Date
          ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: this.opts.deliverFrom.toISOString() }
          : { deliver_policy: this.opts.deliverFrom === 'new' ? DeliverPolicy.New : DeliverPolicy.All }),
        filter_subject: 'pier.events.>',
        ack_wait: nanos(this.opts.ackWaitSeconds * 1000),
        max_ack_pending: 5000,
      });
    }
    const consumer = await nc.jetstream().consumers.get(EVENTS_STREAM, this.opts.durable);
    this.log.info({ durable: this.opts.durable }, 'consuming events');
    const batchSize = this.opts.batch ?? 200;
    while (!this.stopped) {
      const messages: JsMsg[] = [];
      for await (const m of await consumer.fetch({ max_messages: batchSize, expires: 1000 })) messages.push(m);
      if (messages.length === 0) continue;
      const events = messages.map((m) => eventOfMessage(m.string(), m.seq, m.headers?.get('Nats-Msg-Id') || undefined));
      const dropped = events.filter((e) => e === null).length;
      if (dropped > 0) this.log.warn({ dropped }, 'messages on the events stream that are not events were dropped');
      const fresh = await this.store.insert(events.filter((e) => e !== null));
      // Acknowledged only once committed: a crash before this redelivers, and ids dedupe.
      for (const m of messages) m.ack();
      await nc.flush();
      if (fresh > 0) this.stored();
    }
  }
}
