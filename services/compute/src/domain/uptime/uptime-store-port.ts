// What uptime monitoring keeps, and the queries it needs. The domain defines it;
// store/uptime-store.ts implements it with knex. A transaction is the same interface.
import type { PierEvent } from '@pier/kit';
import type { Service } from '../records.ts';

export const UPTIME_STATUSES = ['up', 'down', 'unknown'] as const;
export type UptimeStatus = (typeof UPTIME_STATUSES)[number];

/** What the user chose (defaults applied). */
export interface MonitorSettings {
  path: string;
  interval_seconds: number;
  timeout_ms: number;
  /** The accepted status codes, both ends included. */
  expected_min: number;
  expected_max: number;
}

export interface UptimeMonitor extends MonitorSettings {
  service_id: string;
  /** Bumped by every enable: a check started under older settings is not recorded. */
  generation: number;
  status: UptimeStatus;
  consecutive_failures: number;
  /** The first failed check of the current run of failures (an incident starts there). */
  failing_since: Date | null;
  last_checked_at: Date | null;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  status_changed_at: Date | null;
  /** When the next check is due; claiming a check moves it one interval on. */
  next_check_at: Date;
  created_at: Date;
  updated_at: Date;
}

export type MonitorState = Pick<
  UptimeMonitor,
  'status' | 'consecutive_failures' | 'failing_since' | 'last_checked_at' | 'last_status_code' | 'last_latency_ms' | 'last_error' | 'status_changed_at'
>;

export interface UptimeIncident {
  id: string;
  service_id: string;
  started_at: Date;
  ended_at: Date | null;
  reason: string;
}

/** A check claimed for this process: the monitor as claimed, and its service. */
export interface DueCheck {
  monitor: UptimeMonitor;
  service: Service;
}

/** Checks counted since a time: all of them, and the successful ones. */
export interface CheckCounts {
  checks: number;
  ok: number;
}

/** The checks of one hour (`hour`: its start, UTC). */
export interface HourCounts extends CheckCounts {
  hour: Date;
}

export interface UptimeStore {
  transaction<T>(fn: (tx: UptimeStore) => Promise<T>): Promise<T>;
  writeEvent(event: PierEvent): Promise<void>;

  findMonitor(serviceId: string): Promise<UptimeMonitor | undefined>;
  /** The row with a lock held until the transaction ends. */
  lockMonitor(serviceId: string): Promise<UptimeMonitor | undefined>;
  /** Creates the monitor, or replaces the settings of an existing one (its state and history stay). */
  saveMonitor(serviceId: string, settings: MonitorSettings, nextCheckAt: Date): Promise<{ monitor: UptimeMonitor; created: boolean }>;
  /** Removes the monitor with its history and incidents; false when there was none. */
  deleteMonitor(serviceId: string): Promise<boolean>;
  updateState(serviceId: string, state: MonitorState): Promise<void>;

  /** Counts one check in its hour. */
  countCheck(serviceId: string, at: Date, ok: boolean): Promise<void>;
  /** Counts of the hours starting at or after `since`. */
  checkCounts(serviceId: string, since: Date): Promise<CheckCounts>;
  /** The hours since `since` that have checks, oldest first. */
  hourlyCounts(serviceId: string, since: Date): Promise<HourCounts[]>;

  /** Opens an incident and drops the oldest beyond `keep`. */
  openIncident(serviceId: string, startedAt: Date, reason: string, keep: number): Promise<UptimeIncident>;
  /** Closes the open incident, if any. */
  closeIncident(serviceId: string, endedAt: Date): Promise<UptimeIncident | undefined>;
  /** Newest first. */
  incidents(serviceId: string, limit: number): Promise<UptimeIncident[]>;

  /**
   * Claims up to `limit` checks due at `now` (oldest due first) and moves each monitor's
   * next check one interval on, in one statement: rows another process is claiming are
   * skipped, so no check runs twice. Monitors of deleted, non-web or portless services
   * are never claimed.
   */
  claimDue(now: Date, limit: number): Promise<DueCheck[]>;
  /** Removes monitors whose service was deleted (or is being deleted) or no longer serves HTTP. */
  endOrphans(): Promise<number>;
  /** Deletes up to `batch` hourly counts of hours before `cutoff`; how many went. */
  dropCountsBefore(cutoff: Date, batch: number): Promise<number>;
}
