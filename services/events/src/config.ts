import { z } from 'zod';
import { serviceEnv, port, loadConfig } from '@pier/kit';

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
});

export type EventsConfig = z.infer<typeof eventsEnv>;

export const readConfig = (env: NodeJS.ProcessEnv = process.env): EventsConfig => loadConfig(eventsEnv, env);
