// Uptime monitoring of a web service: enable (or change), read, disable. The checks
// themselves run in the background (uptime-checker.ts).
import { ConflictError } from '@pier/kit';
import { findMutable, findService, type ComputeContext } from '../context.ts';
import type { Scope, Service } from '../records.ts';
import type { HourCounts, UptimeIncident, UptimeMonitor } from './uptime-store-port.ts';
import { events } from '../events.ts';
import { monitorSettings, type EnableUptimeInput } from './uptime-input.ts';
import { INCIDENTS_KEPT, percentage } from './uptime-state.ts';

const HOUR_MS = 3_600_000;

export interface UptimeView {
  /** Null when monitoring is off. */
  monitor: UptimeMonitor | null;
  /** Percentages of successful checks over the current hour and the 23 (or 167) before it; null without checks. */
  uptime24h: number | null;
  uptime7d: number | null;
  /** The current hour and the 23 before it, oldest first; an hour without checks counts 0 of 0. */
  hours: HourCounts[];
  /** Newest first. */
  incidents: UptimeIncident[];
}

const OFF: UptimeView = { monitor: null, uptime24h: null, uptime7d: null, hours: [], incidents: [] };

async function viewOf(ctx: ComputeContext, serviceId: string): Promise<UptimeView> {
  const { store } = ctx.uptime;
  const monitor = await store.findMonitor(serviceId);
  if (!monitor) return OFF;
  // Counts are kept per hour: the windows move by the hour.
  const hour = Math.floor(ctx.now().getTime() / HOUR_MS) * HOUR_MS;
  const dayStart = hour - 23 * HOUR_MS;
  const [hourly, week, incidents] = await Promise.all([
    store.hourlyCounts(serviceId, new Date(dayStart)),
    store.checkCounts(serviceId, new Date(hour - 167 * HOUR_MS)),
    store.incidents(serviceId, INCIDENTS_KEPT),
  ]);
  const counted = new Map(hourly.map((h) => [h.hour.getTime(), h]));
  const hours = Array.from({ length: 24 }, (_, i) => counted.get(dayStart + i * HOUR_MS) ?? { hour: new Date(dayStart + i * HOUR_MS), checks: 0, ok: 0 });
  const day = hours.reduce((sum, h) => ({ checks: sum.checks + h.checks, ok: sum.ok + h.ok }), { checks: 0, ok: 0 });
  return { monitor, uptime24h: percentage(day), uptime7d: percentage(week), hours, incidents };
}

/** Only what answers HTTP can be checked; the 409 says why not. */
function checkable(s: Service): void {
  if (s.service_type !== 'web')
    throw new ConflictError(`uptime checks request a web service over HTTP; this is a ${s.service_type} service`, 'not_a_web_service');
  if (s.port === null) throw new ConflictError('uptime checks need the service to listen on a port; it has none', 'no_port');
}

export async function getUptime(ctx: ComputeContext, scope: Scope, serviceId: string): Promise<UptimeView> {
  const s = await findService(ctx, scope, serviceId);
  // Deleting a service ends its monitor (the row itself is removed by the checker's sweep).
  if (s.deleted_at || s.status === 'deleting') return OFF;
  return viewOf(ctx, s.id);
}

/**
 * POST uptime: creates the monitor, or replaces the settings of an enabled one (its state,
 * counts and incidents stay). The first check comes at a random point of the interval, so
 * monitors enabled together do not all check together.
 */
export async function enableUptime(
  ctx: ComputeContext,
  scope: Scope,
  serviceId: string,
  input: EnableUptimeInput,
): Promise<{ view: UptimeView; created: boolean }> {
  const s = await findMutable(ctx, scope, serviceId);
  checkable(s);
  const settings = monitorSettings(input, ctx.uptime.settings.minIntervalSeconds);
  const firstCheck = new Date(ctx.now().getTime() + Math.random() * settings.interval_seconds * 1000);
  const { created } = await ctx.uptime.store.transaction(async (tx) => {
    const saved = await tx.saveMonitor(s.id, settings, firstCheck);
    await tx.writeEvent(events.uptimeEnabled(s, settings, saved.created));
    return saved;
  });
  ctx.eventsWritten();
  return { view: await viewOf(ctx, s.id), created };
}

/** DELETE uptime: monitoring off, its counts and incidents forgotten. Idempotent. */
export async function disableUptime(ctx: ComputeContext, scope: Scope, serviceId: string): Promise<void> {
  const s = await findMutable(ctx, scope, serviceId);
  const removed = await ctx.uptime.store.transaction(async (tx) => {
    const gone = await tx.deleteMonitor(s.id);
    if (gone) await tx.writeEvent(events.uptimeDisabled(s));
    return gone;
  });
  if (removed) ctx.eventsWritten();
}
