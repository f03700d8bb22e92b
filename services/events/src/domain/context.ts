import type { Logger } from '@pier/kit';
import type { EventStore } from './store-port.ts';
import type { WebhooksContext } from './webhooks.ts';

export interface EventsContext {
  store: EventStore;
  log: Logger;
  /**
   * Settles when events may have been stored (this instance's consumer, or another's
   * through a notification), or after `ms`, or when `signal` aborts: a follower then looks.
   */
  waitForEvents(ms: number, signal: AbortSignal): Promise<void>;
  followPollMs: number;
  /** The workspace's webhook endpoints and their deliveries. */
  hooks: WebhooksContext;
}
