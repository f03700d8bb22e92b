import type { Page, PageRequest, PierEvent } from '@pier/kit';
import type { Attempt, Delivery, Webhook, WebhookSecrets } from './webhook-records.ts';

export interface NewWebhook {
  workspaceId: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  secret: string;
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  description?: string;
  enabled?: boolean;
}

export interface WebhookStore {
  /** Each write records its event (the audit log) in the same transaction. */
  create(w: NewWebhook, event: (w: Webhook) => PierEvent): Promise<Webhook>;
  get(workspaceId: string, id: string): Promise<Webhook | undefined>;
  list(workspaceId: string, page: PageRequest): Promise<Page<Webhook>>;
  update(workspaceId: string, id: string, changes: WebhookChanges, event: (w: Webhook) => PierEvent): Promise<Webhook | undefined>;
  remove(workspaceId: string, id: string, event: (w: Webhook) => PierEvent): Promise<boolean>;
  /** The new secret becomes current; the old one signs beside it until `previousUntil`. */
  rotate(workspaceId: string, id: string, secret: string, previousUntil: Date, event: (w: Webhook) => PierEvent): Promise<Webhook | undefined>;
  secrets(id: string): Promise<WebhookSecrets | undefined>;
  /** A delivery of `event` to the endpoint, due now (a test event, say). */
  enqueue(webhookId: string, event: { id: string; type: string; occurredAt: Date; json: Record<string, unknown> }): Promise<Delivery>;
  deliveries(webhookId: string, page: PageRequest): Promise<Page<Delivery>>;
  delivery(webhookId: string, deliveryId: string): Promise<Delivery | undefined>;
  /** Queues a delivery again, due now, at the start of the schedule; keeps its id. */
  redeliver(webhookId: string, deliveryId: string): Promise<Delivery | undefined>;
  /** Pending deliveries due now, oldest first. */
  due(limit: number): Promise<Delivery[]>;
  /** Records an attempt and the delivery's next state. */
  recordAttempt(deliveryId: string, attempt: Attempt, next: { state: 'pending'; at: Date } | { state: 'succeeded' | 'failed' }): Promise<void>;
  /** Turns an endpoint off whose delivery failed the whole schedule, with its event; false when it already was. */
  disable(webhookId: string, reason: string, event: (w: Webhook) => PierEvent): Promise<boolean>;
}
