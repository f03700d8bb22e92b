import { z } from 'zod';
import { defineRoute, vpcScope, errorResponses, type Route } from '@pier/kit';
import type { ComputeContext } from '../domain/context.ts';
import { serviceMetrics } from '../domain/metrics/metrics.ts';
import { DEFAULT_WINDOW, WINDOWS, type MetricsWindow } from '../domain/metrics/metrics-series.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { metricsJson, metricsSchema } from './metrics-shapes.ts';

const WINDOW_NAMES = Object.keys(WINDOWS) as [MetricsWindow, ...MetricsWindow[]];

const query = z.object({
  window: z
    .enum(WINDOW_NAMES, { error: `must be one of ${WINDOW_NAMES.join(', ')}` })
    .default(DEFAULT_WINDOW)
    .describe('How far back: 1h (1-minute steps, the default), 24h (15-minute steps) or 7d (1-hour steps)'),
});

const errors = errorResponses({
  400: 'Invalid query; `field` names the parameter',
  404: 'Service not found',
});

export function metricsRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: `${BASE}/{serviceID}/metrics`,
      summary:
        "A service's CPU and memory (from the cluster) and its requests per second, responses by status class and latency p50/p95 (from the edge) over a window",
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query,
      responses: { 200: { description: 'One point per step of the window, oldest first', schema: metricsSchema }, ...errors },
      handler: async ({ params, query: q }) => ({ status: 200, body: metricsJson(await serviceMetrics(ctx, vpcScope(params), params.serviceID, q.window)) }),
    }),
  ];
}
