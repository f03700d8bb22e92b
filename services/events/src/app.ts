import type { Route } from '@pier/kit';
import type { EventsContext } from './domain/context.ts';
import { eventRoutes } from './http/event-routes.ts';
import { webhookRoutes } from './http/webhook-routes.ts';

/** Every route events serves, built from its context (tests and the OpenAPI document serve them too). */
export function eventsRoutes(ctx: EventsContext): Route[] {
  return [...eventRoutes(ctx), ...webhookRoutes(ctx.hooks)];
}
