// The collector's memory between two flushes: per service and minute, what the edge
// answered and what the cluster measured. `take` hands the rows over and forgets them, so
// each request and each read is written once; a row of a minute already flushed is simply
// another row of it (rows of one minute add).
import { mergeInto, record, type Histogram } from './latency-histogram.ts';
import type { EdgeRequest, MetricRow, ReplicaUsage, StatusClass } from './metrics-port.ts';

export const MINUTE_MS = 60_000;

export function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS) * MINUTE_MS;
}

export function statusClass(status: number): StatusClass | null {
  if (status >= 200 && status < 300) return '2xx';
  if (status >= 300 && status < 400) return '3xx';
  if (status >= 400 && status < 500) return '4xx';
  if (status >= 500 && status < 600) return '5xx';
  return null;
}

export function emptyRow(serviceId: string, start: number, bucketSeconds: MetricRow['bucketSeconds'] = 60): MetricRow {
  return {
    serviceId,
    bucketSeconds,
    start: new Date(start),
    requests: 0,
    responses: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 },
    latency: {} as Histogram,
    cpuSum: 0,
    cpuSamples: 0,
    memorySum: 0,
    memorySamples: 0,
  };
}

export class MetricMinutes {
  private rows = new Map<string, MetricRow>();

  private row(serviceId: string, at: number): MetricRow {
    const start = minuteOf(at);
    const key = `${serviceId}/${start}`;
    let r = this.rows.get(key);
    if (!r) this.rows.set(key, (r = emptyRow(serviceId, start)));
    return r;
  }

  /**
   * A request (or `count` alike) the edge answered for a service. A 1xx (a WebSocket's 101) counts as a request
   * of no class and no latency: its duration is the whole session's.
   */
  request(serviceId: string, req: Pick<EdgeRequest, 'status' | 'durationMs' | 'at' | 'count'>): void {
    const r = this.row(serviceId, req.at);
    const count = req.count ?? 1;
    r.requests += count;
    const cls = statusClass(req.status);
    if (!cls) return;
    r.responses[cls] += count;
    record(r.latency, req.durationMs, count);
  }

  /**
   * One read of the cluster, at `at`: each service's replicas summed. A service with a replica
   * the cluster has no CPU rate for yet gets no CPU sample from this read (a sum missing a
   * replica would read low); its memory is counted.
   */
  usage(replicas: ReplicaUsage[], at: number): void {
    const byService = new Map<string, { cpu: number; cpuKnown: boolean; memory: number }>();
    for (const u of replicas) {
      const s = byService.get(u.serviceId) ?? { cpu: 0, cpuKnown: true, memory: 0 };
      if (u.cpuCores === null) s.cpuKnown = false;
      else s.cpu += u.cpuCores;
      s.memory += u.memoryBytes;
      byService.set(u.serviceId, s);
    }
    for (const [serviceId, s] of byService) {
      const r = this.row(serviceId, at);
      if (s.cpuKnown) {
        r.cpuSum += s.cpu;
        r.cpuSamples += 1;
      }
      r.memorySum += s.memory;
      r.memorySamples += 1;
    }
  }

  get size(): number {
    return this.rows.size;
  }

  /** The rows gathered so far, forgotten here. */
  take(): MetricRow[] {
    const rows = [...this.rows.values()];
    this.rows = new Map();
    return rows;
  }

  /** Rows a failed flush could not write, kept for the next one. */
  putBack(rows: MetricRow[]): void {
    for (const r of rows) {
      addRow(this.row(r.serviceId, r.start.getTime()), r);
    }
  }
}

/** Adds `from` to `into`: what two rows of one bucket (or the minutes of one hour) mean together. */
export function addRow(into: MetricRow, from: MetricRow): MetricRow {
  into.requests += from.requests;
  for (const k of Object.keys(from.responses) as StatusClass[]) into.responses[k] += from.responses[k];
  mergeInto(into.latency, from.latency);
  into.cpuSum += from.cpuSum;
  into.cpuSamples += from.cpuSamples;
  into.memorySum += from.memorySum;
  into.memorySamples += from.memorySamples;
  return into;
}
