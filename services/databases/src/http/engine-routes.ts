import { defineRoute, errorBodySchema, errorResponses, type Route } from '@pier/kit';
import type { DatabasesContext } from '../domain/context.ts';
import { engineOffers } from '../domain/engines.ts';
import { engineJson } from './shapes.ts';
import { ENGINES_PATH, TAG } from './route-parts.ts';
import * as s from './schemas.ts';

// Read from the adapter on every call: on kubernetes an engine's mode (operator or built
// in) may be decided after start-up, and with it the versions on offer.

export function engineRoutes(ctx: DatabasesContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: ENGINES_PATH,
      summary: 'Database engines this installation offers: versions, default, instance types, replica and storage bounds',
      tag: TAG,
      access: 'User',
      responses: {
        200: { description: 'engines', schema: s.engineList },
        ...errorResponses({ 403: 'not a user identity' }, errorBodySchema),
      },
      handler: async () => {
        const caps = ctx.cluster.capabilities;
        return { status: 200, body: { adapter: caps.adapter, items: engineOffers(caps).map(engineJson) } };
      },
    }),
  ];
}
