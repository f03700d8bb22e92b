// What service metrics need of the world (domain/metrics): the cluster to say what each
// replica uses now (CPU, memory), the edge to report each request it answered for a
// service's host, and a store that keeps the per-minute and per-hour rows.
import type { EdgeRoute } from '../edge/edge-port.ts';
import type { Histogram } from './latency-histogram.ts';

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];
export type StatusCounts = Record<StatusClass, number>;

/** One running replica as the cluster measures it now. */
export interface ReplicaUsage {
  serviceId: string;
  /** The container's (docker) or pod's (kubernetes) identity, stable while it runs. */
  replica: string;
  /** Cores in use (0.25 = a quarter of one), or null when the cluster has no rate for it yet (docker's first read of a container). */
  cpuCores: number | null;
  /** Memory in use, bytes (the working set: page cache the kernel may reclaim is left out). */
  memoryBytes: number;
}

export interface UsagePort {
  /** Every running replica of every service this installation runs, in a few cluster calls. */
  usage(): Promise<ReplicaUsage[]>;
}

/** One request the edge answered, or `count` of them with the same status and latency. */
export interface EdgeRequest {
  /** The request's Host, lowercase, without a port; or, from a port with `routeKeys`, the name it gives the route. */
  host: string;
  status: number;
  durationMs: number;
  /** When it was answered, ms since the epoch. */
  at: number;
  /** How many requests this stands for (an ingress controller's counters are read as counts); 1 when absent. */
  count?: number;
}

export interface EdgeFollower {
  /** The stream is open: requests are being counted from now on (the minutes it covers). */
  opened(): void;
  requests(batch: EdgeRequest[]): void;
}

export interface EdgeTrafficPort {
  /**
   * Calls `on.requests` with the requests the edge answered after `after` (ms since the epoch;
   * null: as far back as the edge keeps, within a few minutes), in order, then with each
   * new one, until the signal aborts or the edge's stream ends (it resolves then; the caller
   * follows again from its cursor).
   */
  follow(after: number | null, on: EdgeFollower, signal: AbortSignal): Promise<void>;
  /**
   * The names this edge gives a route's requests (`EdgeRequest.host`), where they are not its
   * hosts: an ingress controller counts per route of its own, named after the route's hosts.
   */
  routeKeys?(route: EdgeRoute): string[];
}

/** 60: a minute's row; 3600: an hour's, made from its minutes by the rollup. */
export type BucketSeconds = 60 | 3600;

/** What one flush (or one rollup) counted for one service in one bucket. Rows of one bucket add. */
export interface MetricRow {
  serviceId: string;
  bucketSeconds: BucketSeconds;
  start: Date;
  requests: number;
  responses: StatusCounts;
  latency: Histogram;
  /** Sum of the service's CPU (cores, all replicas together) over `cpuSamples` reads. */
  cpuSum: number;
  cpuSamples: number;
  memorySum: number;
  memorySamples: number;
}

export interface MetricsStore {
  /**
   * Adds rows (never replaces: two rows of one bucket are summed by reads) and, in the same
   * transaction, moves the edge cursor (the last request counted, ms) when given.
   */
  add(rows: MetricRow[], edgeCursor?: number): Promise<void>;
  /** The edge cursor: where the next collector (a restart, another instance) goes on; null before any. */
  edgeCursor(): Promise<number | null>;
  /** Records that the edge's requests were being counted during these minutes. */
  cover(minutes: Date[]): Promise<void>;
  /** A service's minute rows from `from` (inclusive) to `to` (exclusive). */
  minutes(serviceId: string, from: Date, to: Date): Promise<MetricRow[]>;
  /** A service's hour rows, and its minute rows not rolled up yet, in the range. */
  hours(serviceId: string, from: Date, to: Date): Promise<MetricRow[]>;
  /** The covered minutes in the range. */
  covered(from: Date, to: Date): Promise<Date[]>;
  /** Rolls up every minute row of an hour that ended before `before` into hour rows, once; the rows made. */
  rollUp(before: Date): Promise<number>;
  /** Deletes minute rows that started before `minutesBefore`, hour rows and coverage before `hoursBefore`; rows deleted. */
  prune(minutesBefore: Date, hoursBefore: Date): Promise<number>;
}
