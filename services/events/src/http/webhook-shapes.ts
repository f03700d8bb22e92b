// The JSON of webhooks and their deliveries, and the zod schemas that document it in OpenAPI.
import { z } from 'zod';
import { listOf } from '@pier/kit';
import type { Delivery, Webhook } from '../domain/webhook-records.ts';

export const webhookSchema = z.object({
  id: z.string(),
  workspace_id: z.string(),
  url: z.string(),
  events: z.array(z.string()).describe('Event types, prefixes ending in `.*`, or `*`'),
  description: z.string(),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable().describe('Why the platform disabled the endpoint (a delivery failed its whole retry schedule); null otherwise'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const webhookWithSecretSchema = webhookSchema.extend({
  secret: z.string().nullable().describe('`whsec_` + base64: the signing secret, shown only in this answer (null when an Idempotency-Key replays it)'),
});

export const webhookListSchema = listOf(webhookSchema);

export const deliverySchema = z.object({
  id: z.string().describe('The delivery, and its `webhook-id` header (the same on every attempt)'),
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  state: z.enum(['pending', 'succeeded', 'failed']),
  next_attempt_at: z.string().nullable(),
  created_at: z.string(),
  attempts: z.array(
    z.object({
      at: z.string(),
      status_code: z.number().nullable(),
      latency_ms: z.number(),
      response: z.string().nullable().describe("The answer's first bytes (1 KiB at most)"),
      error: z.string().nullable(),
    }),
  ),
});

export const deliveryListSchema = listOf(deliverySchema);

export function webhookJson(w: Webhook): z.infer<typeof webhookSchema> {
  return {
    id: w.id,
    workspace_id: w.workspaceId,
    url: w.url,
    events: w.events,
    description: w.description,
    enabled: w.enabled,
    disabled_reason: w.disabledReason,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

export function deliveryJson(d: Delivery): z.infer<typeof deliverySchema> {
  return {
    id: d.id,
    webhook_id: d.webhookId,
    event_id: d.eventId,
    event_type: d.eventType,
    state: d.state,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
    attempts: d.attempts.map((a) => ({ at: a.at.toISOString(), status_code: a.statusCode, latency_ms: a.latencyMs, response: a.response, error: a.error })),
  };
}
