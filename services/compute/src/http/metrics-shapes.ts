// The JSON of a service's metrics, and the zod schema that documents it in OpenAPI.
import { z } from 'zod';
import type { ServiceMetrics } from '../domain/metrics/metrics.ts';
import { WINDOWS, type MetricsWindow } from '../domain/metrics/metrics-series.ts';

const responsesSchema = z
  .object({ '2xx': z.number(), '3xx': z.number(), '4xx': z.number(), '5xx': z.number() })
  .describe('Responses by status class over the step (a WebSocket upgrade, 101, counts as a request of no class and no latency)');

export const metricsSchema = z.object({
  service_id: z.string(),
  window: z.enum(Object.keys(WINDOWS) as [MetricsWindow, ...MetricsWindow[]]),
  resolution_seconds: z.number().describe('Length of one step: 60 for 1h, 900 for 24h, 3600 for 7d'),
  from: z.string().describe('Start of the first step (inclusive)'),
  to: z.string().describe('End of the last step (exclusive); the last step is the one in progress'),
  limits: z
    .object({ cpu_cores: z.number(), memory_bytes: z.number() })
    .describe("Per replica, the instance type's CPU and memory limits: what one replica's use is measured against"),
  requests_unavailable: z
    .string()
    .nullable()
    .describe("Why every request figure is null (kubernetes without the ingress controller's metrics configured, or no edge); null when they are counted"),
  points: z.array(
    z.object({
      at: z.string().describe('Start of the step'),
      cpu_cores: z.number().nullable().describe('CPU in use, cores, all replicas together, averaged over the reads in the step; null: no read'),
      memory_bytes: z.number().nullable().describe('Memory in use (working set), bytes, all replicas together, averaged over the step; null: no read'),
      requests_per_second: z.number().nullable().describe('Requests the edge answered per second over the step; null when none were being counted'),
      responses: responsesSchema.nullable(),
      latency_p50_ms: z.number().nullable().describe('Median time the edge took to answer, ms (within 10%); null without requests or counting'),
      latency_p95_ms: z.number().nullable().describe('95th percentile, ms (within 10%)'),
    }),
  ),
  totals: z
    .object({
      requests: z.number().nullable(),
      responses: responsesSchema.nullable(),
      latency_p50_ms: z.number().nullable(),
      latency_p95_ms: z.number().nullable(),
    })
    .describe('Over the whole window; nulls when no request was being counted'),
});

export function metricsJson(m: ServiceMetrics): z.infer<typeof metricsSchema> {
  return {
    service_id: m.serviceId,
    window: m.window,
    resolution_seconds: m.stepSeconds,
    from: m.from.toISOString(),
    to: m.to.toISOString(),
    limits: { cpu_cores: m.limits.cpuCores, memory_bytes: m.limits.memoryBytes },
    requests_unavailable: m.requestsUnavailable,
    points: m.points.map((p) => ({
      at: p.at.toISOString(),
      cpu_cores: p.cpuCores,
      memory_bytes: p.memoryBytes,
      requests_per_second: p.requestsPerSecond,
      responses: p.responses,
      latency_p50_ms: p.latencyP50Ms,
      latency_p95_ms: p.latencyP95Ms,
    })),
    totals: {
      requests: m.totals.requests,
      responses: m.totals.responses,
      latency_p50_ms: m.totals.latencyP50Ms,
      latency_p95_ms: m.totals.latencyP95Ms,
    },
  };
}
