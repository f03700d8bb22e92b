import { leaderOnly, natsTarget, startService, UrlGuard, type RunningService } from '@pier/kit';
import type { EventsConfig } from './config.ts';
import { eventsRoutes } from './app.ts';
import { EventConsumer } from './consumer/consumer.ts';
import type { EventsContext } from './domain/context.ts';
import { retention } from './domain/retention.ts';
import { migrations, SCHEMA } from './store/migrations.ts';
import { StoredEventsSignal } from './store/notifications.ts';
import { KnexEventStore } from './store/store.ts';
import { KnexWebhookStore } from './store/webhook-store.ts';
import { DeliveryWorker } from './domain/delivery-worker.ts';

export interface StartOptions {
  /** Where log lines go; standard output when absent. */
  logDestination?: NodeJS.WritableStream;
  /** How often the retention pass runs (default hourly). */
  retentionEveryMs?: number;
  /** How often the webhook worker looks for due deliveries besides being woken (default 1 s). */
  deliveryEveryMs?: number;
}

export interface RunningEvents extends RunningService {
  /** Deletes events past the retention now; returns how many went (operators' and tests' lever). */
  trim(): Promise<number>;
}

/** Starts events: its schema, the stream's durable consumer and the retention pass (one instance each), HTTP. */
export async function start(config: EventsConfig, opts: StartOptions = {}): Promise<RunningEvents> {
  return startService({
    name: 'events',
    config,
    httpPort: config.PIER_EVENTS_HTTP_PORT,
    schema: SCHEMA,
    migrations,
    logDestination: opts.logDestination,
    async wire({ db, logger, leases, onStop, relay }) {
      const store = new KnexEventStore(db);
      const installation = await store.installationId();
      const signal = new StoredEventsSignal(db, logger);
      signal.start();
      onStop('stored-events listener', () => signal.stop());
      const guard = new UrlGuard({
        allowHttp: config.PIER_EVENTS_WEBHOOK_ALLOW_HTTP,
        allowedHosts: config.PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS,
        resolvers: config.PIER_DNS_RESOLVERS,
        field: 'url',
      });
      const webhooks = new KnexWebhookStore(db, () => relay.poke());
      const worker = new DeliveryWorker(webhooks, guard, logger, {
        retrySeconds: config.PIER_EVENTS_WEBHOOK_RETRY_SECONDS,
        timeoutMs: config.PIER_EVENTS_WEBHOOK_TIMEOUT_MS,
        intervalMs: opts.deliveryEveryMs ?? 1000,
      });
      const ctx: EventsContext = {
        store,
        log: logger,
        waitForEvents: (ms, abort) => signal.wait(ms, abort),
        followPollMs: config.PIER_EVENTS_FOLLOW_POLL_MS,
        hooks: { webhooks, guard, deliverSoon: () => worker.wake(), now: () => new Date() },
      };
      const from = config.PIER_EVENTS_CONSUME_FROM;
      const deliverFrom = from === 'installed' ? new Date((await store.installedAt()).getTime() - 60_000) : from;
      const consumer = new EventConsumer(
        natsTarget(config),
        store,
        logger,
        { durable: `pier-events-${installation}`, deliverFrom, ackWaitSeconds: config.PIER_EVENTS_ACK_WAIT_SECONDS },
        () => {
          signal.wake();
          worker.wake();
        },
      );
      const trimmer = retention(store, config.PIER_EVENTS_RETENTION_DAYS, opts.retentionEveryMs ?? 3_600_000, logger);
      return {
        routes: eventsRoutes(ctx),
        background: [
          leaderOnly(leases, 'consumer', consumer, logger),
          leaderOnly(leases, 'retention', trimmer, logger),
          // One instance delivers: an attempt is made once, then recorded (at least once).
          leaderOnly(leases, 'webhooks', worker, logger),
        ],
        extra: { trim: () => trimmer.runOnce() },
        describe: { retentionDays: config.PIER_EVENTS_RETENTION_DAYS },
      };
    },
  });
}
