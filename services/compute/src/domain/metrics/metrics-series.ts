// From stored rows to the series the API answers: one point per step of the window's
// resolution, each the sum of the rows that fall in it. Nothing is filled in: a step with
// no read of the cluster has no CPU or memory (null), and a step in which no compute was
// counting the edge's requests has no request figures (null) — zero only when requests were
// being counted and none came.
import { quantile } from './latency-histogram.ts';
import { addRow, emptyRow, MINUTE_MS } from './metric-minutes.ts';
import type { MetricRow, StatusCounts } from './metrics-port.ts';

export const WINDOWS = {
  '1h': { ms: 3_600_000, stepSeconds: 60, rows: 'minutes' },
  '24h': { ms: 86_400_000, stepSeconds: 900, rows: 'minutes' },
  '7d': { ms: 7 * 86_400_000, stepSeconds: 3600, rows: 'hours' },
} as const;
export type MetricsWindow = keyof typeof WINDOWS;
export const DEFAULT_WINDOW: MetricsWindow = '1h';

export interface MetricPoint {
  at: Date;
  cpuCores: number | null;
  memoryBytes: number | null;
  requestsPerSecond: number | null;
  responses: StatusCounts | null;
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
}

export interface MetricSeries {
  window: MetricsWindow;
  stepSeconds: number;
  from: Date;
  to: Date;
  points: MetricPoint[];
  /** Over the whole window: requests counted, by class, and latency percentiles (null where nothing was counted). */
  totals: { requests: number | null; responses: StatusCounts | null; latencyP50Ms: number | null; latencyP95Ms: number | null };
}

/** The window's steps: `to` rounded up to the next step, and as many steps back as the window holds. */
export function windowRange(window: MetricsWindow, now: Date): { from: Date; to: Date } {
  const stepMs = WINDOWS[window].stepSeconds * 1000;
  const to = Math.floor(now.getTime() / stepMs) * stepMs + stepMs;
  return { from: new Date(to - WINDOWS[window].ms), to: new Date(to) };
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * `requestsCounted`: false where the edge's requests are not counted at all (kubernetes'
 * ingress controller): every request figure is null. `covered`: the minutes in which they
 * were being counted.
 */
export function seriesOf(window: MetricsWindow, now: Date, rows: MetricRow[], covered: Date[], requestsCounted: boolean): MetricSeries {
  const { from, to } = windowRange(window, now);
  const stepMs = WINDOWS[window].stepSeconds * 1000;
  const steps = Math.round((to.getTime() - from.getTime()) / stepMs);
  const sums = Array.from({ length: steps }, (_, i) => emptyRow('', from.getTime() + i * stepMs));
  const coveredSeconds = new Array<number>(steps).fill(0);
  const stepOf = (t: Date) => Math.floor((t.getTime() - from.getTime()) / stepMs);
  for (const r of rows) {
    const i = stepOf(r.start);
    if (i >= 0 && i < steps) addRow(sums[i]!, r);
  }
  for (const m of covered) {
    const i = stepOf(m);
    if (i >= 0 && i < steps) coveredSeconds[i]! += MINUTE_MS / 1000;
  }
  const total = emptyRow('', from.getTime());
  let anyCovered = false;
  const points = sums.map((s, i): MetricPoint => {
    const counted = requestsCounted && (coveredSeconds[i]! > 0 || s.requests > 0);
    if (counted) {
      anyCovered = true;
      addRow(total, s);
    }
    return {
      at: s.start,
      cpuCores: s.cpuSamples ? round(s.cpuSum / s.cpuSamples, 6) : null,
      memoryBytes: s.memorySamples ? Math.round(s.memorySum / s.memorySamples) : null,
      // Over the seconds that were counted (a minute's rows may sit in a step whose coverage was lost with a restart).
      requestsPerSecond: counted ? round(s.requests / Math.max(coveredSeconds[i]!, MINUTE_MS / 1000), 3) : null,
      responses: counted ? { ...s.responses } : null,
      latencyP50Ms: counted ? quantile(s.latency, 0.5) : null,
      latencyP95Ms: counted ? quantile(s.latency, 0.95) : null,
    };
  });
  return {
    window,
    stepSeconds: WINDOWS[window].stepSeconds,
    from,
    to,
    points,
    totals: anyCovered
      ? { requests: total.requests, responses: total.responses, latencyP50Ms: quantile(total.latency, 0.5), latencyP95Ms: quantile(total.latency, 0.95) }
      : { requests: null, responses: null, latencyP50Ms: null, latencyP95Ms: null },
  };
}
