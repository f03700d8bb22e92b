import { randomUUID } from 'node:crypto';
import { NotFoundError, type Page, type PageRequest, type PierEvent, type UrlGuard } from '@pier/kit';
import type { Delivery, Webhook } from './webhook-records.ts';
import { newSecret, PREVIOUS_SECRET_MS, type CreateWebhookInput, type UpdateWebhookInput } from './webhook-rules.ts';
import type { WebhookStore } from './webhook-store-port.ts';

// The use cases of a workspace's webhooks. Every change is an event (the audit log); no
// event carries the secret.

export interface WebhooksContext {
  webhooks: WebhookStore;
  /** The URL guard git builds use: checked on create and update, and again at every attempt. */
  guard: UrlGuard;
  /** Wakes the delivery worker (a test event, a redelivery). */
  deliverSoon(): void;
  now(): Date;
}

export const webhookNotFound = () => new NotFoundError('webhook not found', 'webhook_not_found');
export const deliveryNotFound = () => new NotFoundError('delivery not found', 'delivery_not_found');

const event =
  (kind: string, extra: Record<string, unknown> = {}) =>
  (w: Webhook): PierEvent => ({
    kind,
    workspaceId: w.workspaceId,
    resourceId: w.id,
    resourceName: w.description || w.url,
    data: { url: w.url, events: w.events, description: w.description, enabled: w.enabled, ...extra },
  });

export async function createWebhook(ctx: WebhooksContext, workspaceId: string, input: CreateWebhookInput): Promise<{ webhook: Webhook; secret: string }> {
  await ctx.guard.check(input.url);
  const secret = newSecret();
  const webhook = await ctx.webhooks.create({ workspaceId, ...input, secret }, event('webhook.created'));
  return { webhook, secret };
}

export async function getWebhook(ctx: WebhooksContext, workspaceId: string, id: string): Promise<Webhook> {
  return (await ctx.webhooks.get(workspaceId, id)) ?? Promise.reject(webhookNotFound());
}

export function listWebhooks(ctx: WebhooksContext, workspaceId: string, page: PageRequest): Promise<Page<Webhook>> {
  return ctx.webhooks.list(workspaceId, page);
}

export async function updateWebhook(ctx: WebhooksContext, workspaceId: string, id: string, input: UpdateWebhookInput): Promise<Webhook> {
  await getWebhook(ctx, workspaceId, id);
  if (input.url !== undefined) await ctx.guard.check(input.url);
  const fields = Object.keys(input).filter((k) => input[k as keyof UpdateWebhookInput] !== undefined);
  return (await ctx.webhooks.update(workspaceId, id, input, event('webhook.updated', { fields }))) ?? Promise.reject(webhookNotFound());
}

export async function deleteWebhook(ctx: WebhooksContext, workspaceId: string, id: string): Promise<void> {
  if (!(await ctx.webhooks.remove(workspaceId, id, event('webhook.deleted')))) throw webhookNotFound();
}

export async function rotateSecret(ctx: WebhooksContext, workspaceId: string, id: string): Promise<{ webhook: Webhook; secret: string }> {
  const secret = newSecret();
  const until = new Date(ctx.now().getTime() + PREVIOUS_SECRET_MS);
  const webhook = await ctx.webhooks.rotate(workspaceId, id, secret, until, event('webhook.secret_rotated', { previous_secret_until: until.toISOString() }));
  if (!webhook) throw webhookNotFound();
  return { webhook, secret };
}

/** Sends a `webhook.test` event to the endpoint (not stored in the audit log: nothing happened). */
export async function testWebhook(ctx: WebhooksContext, workspaceId: string, id: string): Promise<Delivery> {
  const w = await getWebhook(ctx, workspaceId, id);
  const now = ctx.now();
  const eventId = randomUUID();
  const delivery = await ctx.webhooks.enqueue(w.id, {
    id: eventId,
    type: 'webhook.test',
    occurredAt: now,
    json: {
      id: eventId,
      type: 'webhook.test',
      occurred_at: now.toISOString(),
      workspace_id: workspaceId,
      vpc_id: null,
      resource: { kind: 'webhook', id: w.id, name: w.description || w.url },
      actor: null,
      source_ip: null,
      data: { message: 'a test event sent with POST …/webhooks/{id}/test' },
    },
  });
  ctx.deliverSoon();
  return delivery;
}

export async function listDeliveries(ctx: WebhooksContext, workspaceId: string, id: string, page: PageRequest): Promise<Page<Delivery>> {
  const w = await getWebhook(ctx, workspaceId, id);
  return ctx.webhooks.deliveries(w.id, page);
}

export async function redeliver(ctx: WebhooksContext, workspaceId: string, id: string, deliveryId: string): Promise<Delivery> {
  const w = await getWebhook(ctx, workspaceId, id);
  const d = await ctx.webhooks.redeliver(w.id, deliveryId);
  if (!d) throw deliveryNotFound();
  ctx.deliverSoon();
  return d;
}
