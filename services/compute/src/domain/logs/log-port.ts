// What the logs use cases need from the outside: a LogSource that reads what replicas print
// (cluster/docker-logs.ts, cluster/kubernetes-logs.ts) and a LogStore that keeps it for
// history (store/log-store.ts). The domain defines them; the adapters implement them.
import type { Page } from '@pier/kit';
import type { WorkloadRef } from '../cluster-port.ts';

export type LogStream = 'stdout' | 'stderr';

/**
 * One line a replica printed. `ts` is RFC 3339 in UTC with exactly nine fraction digits
 * (`2025-05-01T12:00:00.123456789Z`, see log-time.ts): fixed width, so comparing the
 * strings compares the times.
 */
export interface LogLine {
  ts: string;
  replica: string;
  deploymentId: string | null;
  stream: LogStream;
  message: string;
}

/** The smallest unit that prints: a Docker container, or a Kubernetes pod. */
export interface LogReplica {
  /** Stable for the unit's whole life (container id, `namespace/pod`): where collection resumes. */
  key: string;
  serviceId: string;
  deploymentId: string | null;
  /** As lines name it: the replica index on Docker, the pod name on Kubernetes. */
  replica: string;
  /** Running now: its output may still grow. */
  running: boolean;
}

export interface RecentOptions {
  /** At most this many of the last lines. */
  tail: number;
  /** Only lines at or after this time. */
  since?: Date;
}

export interface LogSource {
  /** Every replica of every Pier service the cluster has (running or not), in one listing. */
  replicas(): Promise<LogReplica[]>;
  /** One service's replicas (a cron service's runs included, its Docker template not). */
  serviceReplicas(ref: WorkloadRef): Promise<LogReplica[]>;
  /** The last `tail` lines of one replica, oldest first. */
  recent(replica: LogReplica, opts: RecentOptions): Promise<LogLine[]>;
  /**
   * A replica's lines from `after` on (from its start when null; lines stamped `after` may
   * come again), in batches as they are read, until it stops printing for good (it exited
   * or was removed) or `signal` aborts. Not reading applies back-pressure.
   */
  follow(replica: LogReplica, after: string | null, signal: AbortSignal): AsyncIterable<LogLine[]>;
  /** Calls `started` whenever a replica may have started, until `signal` aborts; may do nothing (then listing finds it). */
  watch(started: () => void, signal: AbortSignal): void;
}

/** A line as stored: with its service. */
export interface StoredLine extends LogLine {
  serviceId: string;
}

/** How far collection got in one replica's output: the newest `ts` stored. */
export interface ReplicaCursor {
  key: string;
  serviceId: string;
  ts: string;
}

export interface HistoryQuery {
  serviceId: string;
  /** Inclusive. */
  start: Date;
  /** Exclusive. */
  end: Date;
  /** Substring the message holds (case-sensitive). */
  q?: string;
  replica?: string;
  limit: number;
  cursor?: string;
}

export interface LogStore {
  /** The lines, and how far each replica got, in one transaction: a crash keeps both or neither. */
  append(lines: StoredLine[], cursors: ReplicaCursor[]): Promise<void>;
  /** The cursor of one replica, if any of its lines was ever stored. */
  cursor(key: string): Promise<string | null>;
  /** Lines of a time range, oldest first; `cursor` from the previous page (a bad one is a 400 `invalid_cursor`). */
  history(query: HistoryQuery): Promise<Page<LogLine>>;
  /** Makes the store ready for lines of these days (UTC). */
  ensureDays(days: Date[]): Promise<void>;
  /** Drops every day (UTC) that ended at or before `cutoff`, and the cursors older than it; the days dropped. */
  dropBefore(cutoff: Date): Promise<string[]>;
}
