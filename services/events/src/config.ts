import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

/** Comma-separated words, blanks dropped. */
const words = (v: string) =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** Standard Webhooks' schedule (as Svix and Render use it): retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after the first attempt, about 28 hours in all. */
export const DEFAULT_RETRY_SECONDS = '5,300,1800,7200,18000,36000,36000';

export const eventsEnv = serviceEnv.extend({
  PIER_EVENTS_HTTP_PORT: port(7105),
  /** Stored events older than this many days are deleted (the audit log's retention). */
  PIER_EVENTS_RETENTION_DAYS: z.coerce
    .number({ message: 'PIER_EVENTS_RETENTION_DAYS must be a number of days' })
    .positive('PIER_EVENTS_RETENTION_DAYS must be above 0')
    .default(90),
  /**
   * Where the durable consumer starts the first time it is created: `all` (every event the
   * stream still holds), `installed` (what was published from a minute before this
   * service's schema was made: the tests, whose NATS many platforms share) or `new` (only
   * what is published from then on).
   */
  PIER_EVENTS_CONSUME_FROM: z.enum(['all', 'installed', 'new'], { message: 'PIER_EVENTS_CONSUME_FROM must be all, installed or new' }).default('all'),
  /** How long a delivered event may stay unacknowledged (a consumer that died) before JetStream sends it again. */
  PIER_EVENTS_ACK_WAIT_SECONDS: z.coerce.number().positive().default(10),
  /** How often a follower looks for new events when no notification came (the fallback of LISTEN/NOTIFY). */
  PIER_EVENTS_FOLLOW_POLL_MS: z.coerce.number().int().positive().default(2000),
  /**
   * Seconds between a webhook delivery's failed attempt and the next, comma-separated: after
   * the last, the delivery has failed, and an endpoint whose delivery failed the whole
   * schedule is disabled.
   */
  PIER_EVENTS_WEBHOOK_RETRY_SECONDS: z
    .string()
    .default(DEFAULT_RETRY_SECONDS)
    .transform(words)
    .refine((items) => items.length > 0 && items.length <= 20 && items.every((x) => /^\d+(\.\d+)?$/.test(x) && Number(x) <= 7 * 86_400), {
      message: 'PIER_EVENTS_WEBHOOK_RETRY_SECONDS must be 1 to 20 comma-separated numbers of seconds (each at most a week)',
    })
    .transform((items) => items.map(Number)),
  /** Webhook hosts let through the URL guard whatever they resolve to (tests' local receivers); none by default. */
  PIER_EVENTS_WEBHOOK_ALLOWED_HOSTS: z.string().default('').transform(words),
  /** Allow http:// webhook URLs besides https:// (`true`/`false`, default false; tests). */
  PIER_EVENTS_WEBHOOK_ALLOW_HTTP: z
    .enum(['true', 'false'], { error: 'PIER_EVENTS_WEBHOOK_ALLOW_HTTP must be true or false' })
    .default('false')
    .transform((v) => v === 'true'),
  /** How long an endpoint has to answer a delivery (a 2xx within it is success). */
  PIER_EVENTS_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  /** DNS servers (`ip` or `ip:port`, comma-separated) webhook hosts are resolved with; the system's resolver when empty. */
  PIER_DNS_RESOLVERS: z.string().default('').transform(words),
});

export type EventsConfig = z.infer<typeof eventsEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): EventsConfig => loadConfig(eventsEnv, env);
