// Service metrics in compute's schema (migration 0015): `metric_rows`, a row per flush (or
// rollup) of one service and bucket, summed by reads; `metric_coverage`, the minutes in
// which the edge's requests were counted; `metric_cursors`, where counting the edge's
// requests goes on after a restart or a handover.
import type { Knex } from '@pier/kit';
import { addRow, emptyRow } from '../domain/metrics/metric-minutes.ts';
import type { BucketSeconds, MetricRow, MetricsStore } from '../domain/metrics/metrics-port.ts';
import type { Histogram } from '../domain/metrics/latency-histogram.ts';

const HOUR_MS = 3_600_000;
/** The cursor of the edge's requests in `metric_cursors`. */
const EDGE_CURSOR = 'edge';
/** Rows per insert statement. */
const CHUNK = 1000;

interface Stored {
  id: string;
  service_id: string;
  bucket_seconds: number;
  bucket_start: Date;
  requests: number;
  status_2xx: number;
  status_3xx: number;
  status_4xx: number;
  status_5xx: number;
  latency: Histogram;
  cpu_sum: number;
  cpu_samples: number;
  memory_sum: number;
  memory_samples: number;
}

function fromStored(r: Stored): MetricRow {
  return {
    serviceId: r.service_id,
    bucketSeconds: r.bucket_seconds as BucketSeconds,
    start: new Date(r.bucket_start),
    requests: r.requests,
    responses: { '2xx': r.status_2xx, '3xx': r.status_3xx, '4xx': r.status_4xx, '5xx': r.status_5xx },
    latency: r.latency,
    cpuSum: Number(r.cpu_sum),
    cpuSamples: r.cpu_samples,
    memorySum: Number(r.memory_sum),
    memorySamples: r.memory_samples,
  };
}

function toStored(r: MetricRow): Omit<Stored, 'id' | 'latency'> & { latency: string } {
  return {
    service_id: r.serviceId,
    bucket_seconds: r.bucketSeconds,
    bucket_start: r.start,
    requests: r.requests,
    status_2xx: r.responses['2xx'],
    status_3xx: r.responses['3xx'],
    status_4xx: r.responses['4xx'],
    status_5xx: r.responses['5xx'],
    latency: JSON.stringify(r.latency),
    cpu_sum: r.cpuSum,
    cpu_samples: r.cpuSamples,
    memory_sum: r.memorySum,
    memory_samples: r.memorySamples,
  };
}

export class KnexMetricsStore implements MetricsStore {
  constructor(private readonly db: Knex) {}

  async add(rows: MetricRow[], edgeCursor?: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      for (let i = 0; i < rows.length; i += CHUNK) await trx('metric_rows').insert(rows.slice(i, i + CHUNK).map(toStored));
      if (edgeCursor !== undefined) await trx('metric_cursors').insert({ name: EDGE_CURSOR, at_ms: edgeCursor }).onConflict('name').merge();
    });
  }

  async edgeCursor(): Promise<number | null> {
    const r = await this.db('metric_cursors').where({ name: EDGE_CURSOR }).first();
    return r ? Number(r.at_ms) : null;
  }

  async cover(minutes: Date[]): Promise<void> {
    if (minutes.length)
      await this.db('metric_coverage')
        .insert(minutes.map((minute) => ({ minute })))
        .onConflict('minute')
        .ignore();
  }

  async minutes(serviceId: string, from: Date, to: Date): Promise<MetricRow[]> {
    const rows = await this.db('metric_rows')
      .where({ service_id: serviceId, bucket_seconds: 60 })
      .where('bucket_start', '>=', from)
      .where('bucket_start', '<', to);
    return (rows as Stored[]).map(fromStored);
  }

  async hours(serviceId: string, from: Date, to: Date): Promise<MetricRow[]> {
    const rows = await this.db('metric_rows')
      .where({ service_id: serviceId })
      .where('bucket_start', '>=', from)
      .where('bucket_start', '<', to)
      .where((q) => q.where('bucket_seconds', 3600).orWhere((m) => m.where('bucket_seconds', 60).where('rolled', false)));
    return (rows as Stored[]).map(fromStored);
  }

  async covered(from: Date, to: Date): Promise<Date[]> {
    const rows = await this.db('metric_coverage').where('minute', '>=', from).where('minute', '<', to).select('minute');
    return rows.map((r: { minute: Date }) => new Date(r.minute));
  }

  async rollUp(before: Date): Promise<number> {
    return this.db.transaction(async (trx) => {
      // SKIP LOCKED: another instance rolling at the same moment takes other rows, never the same ones.
      const rows = (await trx('metric_rows')
        .where({ bucket_seconds: 60, rolled: false })
        .where('bucket_start', '<', before)
        .forUpdate()
        .skipLocked()
        .limit(50_000)) as Stored[];
      if (!rows.length) return 0;
      const hours = new Map<string, MetricRow>();
      for (const r of rows) {
        const hour = Math.floor(new Date(r.bucket_start).getTime() / HOUR_MS) * HOUR_MS;
        const key = `${r.service_id}/${hour}`;
        const into = hours.get(key) ?? hours.set(key, emptyRow(r.service_id, hour, 3600)).get(key)!;
        addRow(into, fromStored(r));
      }
      const made = [...hours.values()];
      for (let i = 0; i < made.length; i += CHUNK) await trx('metric_rows').insert(made.slice(i, i + CHUNK).map(toStored));
      await trx('metric_rows')
        .whereIn(
          'id',
          rows.map((r) => r.id),
        )
        .update({ rolled: true });
      return made.length;
    });
  }

  async prune(minutesBefore: Date, hoursBefore: Date): Promise<number> {
    const minutes = await this.db('metric_rows').where({ bucket_seconds: 60, rolled: true }).where('bucket_start', '<', minutesBefore).delete();
    const hours = await this.db('metric_rows').where('bucket_start', '<', hoursBefore).delete();
    await this.db('metric_coverage').where('minute', '<', hoursBefore).delete();
    return minutes + hours;
  }
}
