import { z } from 'zod';
import { pageQuery, queryFlag } from '@pier/kit';
import type { EventFilters } from './records.ts';

// The query of GET /workspaces/{ws}/events: a page (or follow=true), and the filters. A bad
// filter is a 400 naming its field (kit's parseWith).

const TYPE = /^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$/;
const uuid = (what: string) =>
  z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, `must be a ${what} id (a UUID)`)
    .transform((v) => v.toLowerCase());
const instant = z
  .string()
  .refine((v) => /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)), {
    message: 'must be an ISO 8601 date or date-time (2026-01-31T12:00:00Z)',
  })
  .transform((v) => new Date(v));

export const eventsQuery = pageQuery.extend({
  type: z
    .string()
    .max(200)
    .regex(TYPE, 'must be an event type (service.deleted) or a prefix ending in .* (service.*)')
    .optional()
    .describe('An event type (`api_key.revoked`) or a prefix ending in `.*` (`service.*`)'),
  resource_id: z.string().min(1).max(200).optional().describe('Only events about this resource'),
  vpc_id: uuid('VPC').optional().describe('Only events in this VPC'),
  actor: uuid('user').optional().describe("Only events of this user's changes (a user id)"),
  since: instant.optional().describe('Only events at or after this instant (ISO 8601)'),
  until: instant.optional().describe('Only events before this instant (ISO 8601)'),
  follow: queryFlag(false, 'Stream events as server-sent events (`id:` is the event id; reconnect with `Last-Event-ID`) instead of a page'),
});

export type EventsQuery = z.infer<typeof eventsQuery>;

export function filtersOf(q: EventsQuery): EventFilters {
  const f: EventFilters = {};
  if (q.type) f.type = q.type.endsWith('.*') ? { prefix: q.type.slice(0, -1) } : { exact: q.type };
  if (q.resource_id) f.resourceId = q.resource_id;
  if (q.vpc_id) f.vpcId = q.vpc_id;
  if (q.actor) f.actor = q.actor;
  if (q.since) f.since = q.since;
  if (q.until) f.until = q.until;
  return f;
}
