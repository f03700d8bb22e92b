// GET /services/{id}/metrics: a service's CPU, memory, requests, status classes and latency
// over a window, at the window's resolution (metrics-series.ts), from the rows the collector
// wrote (metrics-collector.ts). A deleted service's metrics stay readable while kept.
import { resourcesOf } from '@pier/kit';
import { findService, type ComputeContext } from '../context.ts';
import type { Scope } from '../records.ts';
import { seriesOf, windowRange, WINDOWS, type MetricSeries, type MetricsWindow } from './metrics-series.ts';

export interface ServiceMetrics extends MetricSeries {
  serviceId: string;
  /** Per replica, the instance type's CPU limit (cores) and memory limit (bytes): what a replica's use is measured against. */
  limits: { cpuCores: number; memoryBytes: number };
  /** Why request figures are null throughout, when they are. */
  requestsUnavailable: string | null;
}

export async function serviceMetrics(ctx: ComputeContext, scope: Scope, id: string, window: MetricsWindow): Promise<ServiceMetrics> {
  const service = await findService(ctx, scope, id);
  const now = ctx.now();
  const { from, to } = windowRange(window, now);
  const { store, traffic, trafficUnavailable } = ctx.metrics;
  const [rows, covered] = await Promise.all([
    WINDOWS[window].rows === 'hours' ? store.hours(service.id, from, to) : store.minutes(service.id, from, to),
    traffic ? store.covered(from, to) : Promise.resolve([]),
  ]);
  const resources = resourcesOf(service.instance_type);
  return {
    serviceId: service.id,
    ...seriesOf(window, now, rows, covered, traffic !== null),
    limits: { cpuCores: resources.cpu, memoryBytes: resources.memoryMiB * 1024 * 1024 },
    requestsUnavailable: traffic ? null : trafficUnavailable,
  };
}
