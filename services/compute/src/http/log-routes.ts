import { z } from 'zod';
import { defineRoute, queryFlag, vpcScope, listOf, errorResponses, listBody, type Route, type ServerSentEvent } from '@pier/kit';
import type { ComputeContext } from '../domain/context.ts';
import { followLogs, logHistory, recentLogs, type FollowEvent } from '../domain/logs/logs.ts';
import { DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT, MAX_SEARCH_LENGTH, REPLICA_PATTERN } from '../domain/logs/log-query.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { logLineJson, logLineSchema } from './shapes.ts';

const LIMIT_RULE = `must be an integer from 1 to ${MAX_LOG_LIMIT}`;
const TIME_RULE = 'an ISO 8601 time (2025-05-01T12:00:00Z), or a duration back from now (15m, 2h, 1h30m, 7d)';

const limit = z.coerce
  .number({ error: LIMIT_RULE })
  .int(LIMIT_RULE)
  .min(1, LIMIT_RULE)
  .max(MAX_LOG_LIMIT, LIMIT_RULE)
  .default(DEFAULT_LOG_LIMIT)
  .describe(`Lines, 1-${MAX_LOG_LIMIT} (default ${DEFAULT_LOG_LIMIT})`);
const replica = z
  .string({ error: 'must be a single replica' })
  .regex(REPLICA_PATTERN, 'must name a replica as lines do: 0, 1, ... on Docker, a pod name on Kubernetes')
  .optional()
  .describe("Only this replica's lines");
const time = (description: string) =>
  z
    .string({ error: `must be a single time: ${TIME_RULE}` })
    .max(64, `must be ${TIME_RULE}`)
    .optional()
    .describe(`${description}: ${TIME_RULE}`);

const recentQuery = z.object({
  limit,
  replica,
  since: time('Only lines printed at or after this time'),
  follow: queryFlag(false, 'Answer with server-sent events (text/event-stream): the recent lines, then each new one, until the client leaves'),
});

const historyQuery = z.object({
  start: time('From (default: an hour before end)'),
  end: time('Until, exclusive (default: now)'),
  q: z
    .string({ error: 'must be a single search string' })
    .min(1, 'must not be empty')
    .max(MAX_SEARCH_LENGTH, `must be at most ${MAX_SEARCH_LENGTH} characters`)
    .optional()
    .describe('Only lines holding this text (case-sensitive)'),
  replica,
  limit,
  cursor: z
    .string({ error: 'must be a single cursor string' })
    .max(200, 'is not a cursor returned by this list')
    .optional()
    .describe('`next_cursor` of the previous page'),
});

const errors = errorResponses({
  400: 'Invalid query; `field` names the parameter',
  404: 'Service not found',
  503: 'The cluster cannot be reached',
});

async function* serverSentEvents(events: AsyncIterable<FollowEvent>): AsyncIterable<ServerSentEvent> {
  for await (const e of events) {
    yield e.type === 'line' ? { event: 'line', data: logLineJson(e.line) } : { event: 'dropped', data: { count: e.count } };
  }
}

export function logRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}/logs`,
      summary:
        "Recent lines of the service's replicas, oldest first. With follow=true: server-sent events — `line` events (the recent lines, then each new one), `dropped` ({count}) when the client fell too far behind, and a keep-alive comment at least every 15 s",
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: recentQuery,
      responses: { 200: { description: 'The lines (or, with follow=true, an event stream)', schema: z.object({ items: z.array(logLineSchema) }) }, ...errors },
      handler: async ({ params, query, signal }) => {
        const q = { limit: query.limit, replica: query.replica, since: query.since };
        if (query.follow) return { status: 200, events: serverSentEvents(await followLogs(ctx, vpcScope(params), params.serviceID, q, signal)) };
        return { status: 200, body: { items: (await recentLogs(ctx, vpcScope(params), params.serviceID, q)).map(logLineJson) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}/logs/history`,
      summary: 'Stored lines of a time range (default the last hour), oldest first, kept for the configured retention (default 7 days)',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: historyQuery,
      responses: { 200: { description: 'A page of lines', schema: listOf(logLineSchema) }, 400: errors[400], 404: errors[404] },
      handler: async ({ params, query }) => {
        const page = await logHistory(ctx, vpcScope(params), params.serviceID, query);
        return { status: 200, body: listBody(page, logLineJson) };
      },
    }),
  ];
}
