import { z } from 'zod';
import { defineRoute, errorBodySchema, FORBIDDEN_DESCRIPTION, listBody, type Route } from '@pier/kit';
import type { EventsContext } from '../domain/context.ts';
import { eventsQuery, filtersOf } from '../domain/filters.ts';
import { followEvents, followStart, listEvents } from '../domain/read-events.ts';
import { eventJson, eventListSchema } from './shapes.ts';

const params = z.object({ workspaceID: z.string() });

export function eventRoutes(ctx: EventsContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/workspaces/{workspaceID}/events',
      summary:
        "The workspace's events, newest first: every write made through the API (the audit log: who, with which credential, from where) " +
        "and the platform's own changes (status changes, backups, wakes, certificates). With `follow=true`, a server-sent event stream of " +
        'new events (`event: event`, `id:` the event id) that a client resumes with `Last-Event-ID`, missing and repeating nothing.',
      tag: 'events',
      access: 'Admin',
      params,
      query: eventsQuery,
      responses: {
        200: { description: 'a page of events (or, with follow=true, a text/event-stream of them)', schema: eventListSchema },
        400: { description: 'a bad filter, limit or cursor (the message and `field` name it)', schema: errorBodySchema },
        403: { description: FORBIDDEN_DESCRIPTION, schema: errorBodySchema },
      },
      handler: async ({ params: p, query, lastEventId, signal }) => {
        const filters = filtersOf(query);
        if (query.follow) {
          const from = await followStart(ctx, p.workspaceID, lastEventId);
          return { status: 200, events: followEvents(ctx, p.workspaceID, filters, from, signal, eventJson) };
        }
        const page = await listEvents(ctx, p.workspaceID, filters, { limit: query.limit, cursor: query.cursor });
        return { status: 200, body: listBody(page, eventJson) };
      },
    }),
  ];
}
