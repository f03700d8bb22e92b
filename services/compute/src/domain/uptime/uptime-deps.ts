// Everything uptime monitoring works with, as one field of the context.
import type { UptimeProbePort } from './uptime-probe-port.ts';
import type { UptimeStore } from './uptime-store-port.ts';

export interface UptimeSettings {
  /** The shortest interval a monitor may ask for (the API's rule is 30 s; tests lower it). */
  minIntervalSeconds: number;
  /** Checks in flight at once in this process. */
  concurrency: number;
  /** Days of hourly check counts kept (uptime_7d needs 7). */
  retentionDays: number;
}

export interface UptimeDeps {
  store: UptimeStore;
  probe: UptimeProbePort;
  settings: UptimeSettings;
}
