import { createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';

// What a webhook may be, which events it takes, and the Standard Webhooks signature
// (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`
// keyed with the secret's bytes (what follows `whsec_`, base64-decoded).

const PATTERN = /^(\*|[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?)$/;

export const eventPatterns = z
  .array(z.string().max(200).regex(PATTERN, 'must be an event type (service.deleted), a prefix ending in .* (service.*) or *'), {
    error: 'must be a list of event types or patterns',
  })
  .min(1, 'must name at least one event type or pattern (* for every event)')
  .max(50, 'at most 50 patterns');

const url = z.string().min(1, 'is required').max(2000, 'at most 2000 characters');
const description = z.string().max(500, 'at most 500 characters');

export const createWebhookInput = z.strictObject({
  url: url.describe('Where events are POSTed: https:// on a public address (the same URL guard as git builds)'),
  events: eventPatterns.describe('Event types, prefixes ending in `.*`, or `*`'),
  description: description.default('').describe('What the endpoint is for'),
  enabled: z.boolean().default(true),
});
export type CreateWebhookInput = z.infer<typeof createWebhookInput>;

export const updateWebhookInput = z.strictObject({
  url: url.optional(),
  events: eventPatterns.optional(),
  description: description.optional(),
  enabled: z.boolean().optional().describe('true also re-enables an endpoint the platform disabled'),
});
export type UpdateWebhookInput = z.infer<typeof updateWebhookInput>;

/** Whether an event of `type` goes to an endpoint asking for `patterns`. */
export function matches(patterns: readonly string[], type: string): boolean {
  return patterns.some((p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))));
}

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** One `v1,<base64>` signature of a delivery with `secret`. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: a signature per secret in force, space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(' ');
}

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_MS = 24 * 3600 * 1000;
