// A workspace's webhook endpoints, their deliveries and each delivery's attempts.

export interface Webhook {
  id: string;
  workspaceId: string;
  url: string;
  /** Event types or prefixes ending in `.*`, or `*` for every event. */
  events: string[];
  description: string;
  enabled: boolean;
  /** Why the platform disabled it (its deliveries failed the whole retry schedule); null otherwise. */
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The signing secrets of an endpoint: the current one, and the one a rotation replaced while it still signs. */
export interface WebhookSecrets {
  secret: string;
  previous: string | null;
  previousUntil: Date | null;
}

export type DeliveryState = 'pending' | 'succeeded' | 'failed';

export interface Attempt {
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  /** The answer's first bytes (text). */
  response: string | null;
  error: string | null;
}

export interface Delivery {
  /** Also the `webhook-id` header: the same on every attempt and redelivery. */
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** The event as the API shows it: the body's `data`. */
  event: Record<string, unknown>;
  /** The event's time: the body's `timestamp`. */
  occurredAt: Date;
  state: DeliveryState;
  /** Attempts made since it was (re)queued: where it is in the retry schedule. */
  attemptsInRound: number;
  nextAttemptAt: Date | null;
  createdAt: Date;
  attempts: Attempt[];
}
